import { Type } from "@sinclair/typebox";
import { ERROR_CODES } from "../error-codes.js";
import { commandId } from "./identifiers.js";
import { anyObject, enumOf, type Wire } from "./json-schema.js";

/** Contract section 6: every error body. */
export const ErrorBodySchema = Type.Object({
  error: Type.Object({
    code: enumOf(ERROR_CODES),
    reason: Type.String({ description: "Why, more precisely than the code (e.g. HttpRequests)" }),
    message: Type.String(),
    commandId: Type.Optional(commandId()),
    details: Type.Optional(
      anyObject(
        "For ResourceExhausted: governor (command or http), lane or pool (data or control), limit, limitValue",
      ),
    ),
  }),
});

export type ErrorBody = Wire<typeof ErrorBodySchema>;
