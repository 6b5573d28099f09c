import { type TObject, type TProperties, Type } from "@sinclair/typebox";
import { commandId } from "./identifiers.js";
import type { Wire } from "./json-schema.js";

/** Every write answers with the command ID it ran under. */
export const WrittenSchema = Type.Object({ commandId: commandId() });
export type Written = Wire<typeof WrittenSchema>;

/** `{"commandId", ...fields}`: how every write answers. */
export function written<P extends TProperties>(
  properties: P,
): TObject<{ commandId: ReturnType<typeof commandId> } & P> {
  return Type.Object({ commandId: commandId(), ...properties });
}
