import { Type } from "@sinclair/typebox";
import { key, MAX_EDGE_TYPE_CHARS } from "./identifiers.js";
import { enumOf, integer, nullable, orNull, text, type Wire } from "./json-schema.js";
import { READ_LIMITS } from "./read-limits.js";
import { written } from "./written.js";

/** The graph: typed edges between catalog keys, and breadth-first traversal over them. */

/** An edge as a request names it, every part checked. */
export const EdgeSchema = Type.Object({
  from: key("The source node (a catalog key)"),
  type: text(1, MAX_EDGE_TYPE_CHARS, "The edge type"),
  to: key("The target node (a catalog key)"),
});
export type Edge = Wire<typeof EdgeSchema>;

/** An edge as an answer names it. */
const edgeFields = { from: key(), type: Type.String(), to: key() };

export const PutEdgeResultSchema = written({ ...edgeFields, created: Type.Boolean() });
export type PutEdgeResult = Wire<typeof PutEdgeResultSchema>;

export const DeleteEdgeResultSchema = written(edgeFields);
export type DeleteEdgeResult = Wire<typeof DeleteEdgeResultSchema>;

export const TraverseRequestSchema = Type.Object({
  start: key("The node to start from"),
  direction: Type.Optional(enumOf(["out", "in", "both", null])),
  types: Type.Optional(orNull(Type.Array(text(1, MAX_EDGE_TYPE_CHARS)))),
  maxDepth: Type.Optional(orNull(integer(1, READ_LIMITS.maxTraverseDepth))),
  limit: Type.Optional(orNull(integer(1, READ_LIMITS.maxTraverseNodes))),
});
export type TraverseRequest = Wire<typeof TraverseRequestSchema>;

export const TraversalSchema = Type.Object({
  nodes: Type.Array(Type.Object({ id: key(), depth: integer(0), via: nullable(Type.Object(edgeFields)) })),
  truncated: Type.Boolean({
    description: "The traversal stopped at its node limit, its bound on edges followed or its byte bound",
  }),
});
export type Traversal = Wire<typeof TraversalSchema>;
