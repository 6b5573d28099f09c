import { Type } from "@sinclair/typebox";
import { anyJson, integer, text, type Wire } from "./json-schema.js";
import { READ_LIMITS } from "./read-limits.js";
import { written } from "./written.js";

/** Dispatch channels: directives appended in order, read after a sequence number. */

export const DispatchBodySchema = Type.Object({
  directive: text(1, 256),
  data: Type.Optional(anyJson("Optional directive data")),
});

/** `GET /v1/dispatch/{channel}`'s query string: read directives after a sequence number. */
export const DISPATCH_QUERY_SCHEMAS = {
  after: Type.String({
    pattern: "^[0-9]{1,15}$",
    description: "Directives with a sequence number above this (default 0)",
  }),
  limit: Type.String({
    pattern: "^0*(?:[1-9][0-9]{0,2}|1000)$",
    description: `At most this many directives, at least 1 (default ${READ_LIMITS.defaultDispatchRead}, at most ${READ_LIMITS.maxDispatchRead})`,
  }),
};

export const DispatchResultSchema = written({ channel: Type.String(), sequence: integer(1) });
export type DispatchResult = Wire<typeof DispatchResultSchema>;

export const DirectiveSchema = Type.Object({
  sequence: integer(1),
  directive: Type.String(),
  data: anyJson("null when none"),
  atMs: integer(0),
});
export type Directive = Wire<typeof DirectiveSchema>;

export const DispatchReadSchema = Type.Object({
  channel: Type.String(),
  directives: Type.Array(DirectiveSchema),
});
export type DispatchRead = Wire<typeof DispatchReadSchema>;
