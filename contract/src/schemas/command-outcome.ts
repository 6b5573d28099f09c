import { Type } from "@sinclair/typebox";
import { ERROR_CODES } from "../error-codes.js";
import { commandId } from "./identifiers.js";
import { anyJson, enumOf, integer, nullable, requiredWhen, type Wire } from "./json-schema.js";

/**
 * `GET /v1/commands/{commandId}`: a command ID's durable outcome: its result, or the deterministic
 * refusal it committed as; past the voters' full outcome window, `expired`: it applied at `index`, but
 * only whether it failed remains.
 */
export const CommandOutcomeSchema = requiredWhen(
  Type.Object({
    commandId: commandId(),
    status: enumOf(
      ["committed", "failed", "expired"],
      "expired: applied, but only its dedupe record remains (the result is gone)",
    ),
    index: integer(1),
    result: Type.Optional(anyJson("The command's result (committed)")),
    failed: Type.Optional(Type.Boolean({ description: "Whether it committed as a refusal (expired)" })),
    /** The code of the refusal it committed as; null when it committed. */
    errorCode: Type.Optional(nullable(enumOf(ERROR_CODES))),
    error: Type.Optional(
      Type.Object(
        { code: enumOf(ERROR_CODES), reason: Type.String(), message: Type.String() },
        { description: "The deterministic refusal it committed as (failed)" },
      ),
    ),
  }),
  "status",
  { committed: "result", failed: "error", expired: ["failed", "errorCode"] },
);
export type CommandOutcome = Wire<typeof CommandOutcomeSchema>;
