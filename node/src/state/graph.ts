import { NotFoundError } from "@keyload/contract";
import type Database from "better-sqlite3";
import { checkKey, checkText, MAX_EDGE_TYPE_CHARS } from "../requests/identifiers.js";
import { READ_LIMITS } from "../requests/read-limits.js";
import type { ApplyContext } from "./apply-context.js";
import type { ChangeFeed } from "./change-feed.js";
import {
  invalid,
  isJsonObject,
  optionalArray,
  optionalInteger,
  optionalString,
  requireString,
} from "./json-body.js";

export interface Edge {
  readonly from: string;
  readonly type: string;
  readonly to: string;
}

export type Direction = "out" | "in" | "both";

export interface TraverseRequest {
  readonly start: string;
  readonly direction: Direction;
  /** Follow only these edge types; empty follows every type. */
  readonly types: readonly string[];
  readonly maxDepth: number;
  readonly limit: number;
}

/** Validates the `{"from","type","to"}` body of `PUT`/`DELETE /v1/graph/edges`. */
export function parseEdge(body: Record<string, unknown>): Edge {
  return {
    from: checkKey("from", requireString(body, "from")),
    type: checkText("type", requireString(body, "type"), MAX_EDGE_TYPE_CHARS),
    to: checkKey("to", requireString(body, "to")),
  };
}

/** Validates a `POST /v1/graph/traverse` body: `{"start","direction"?,"types"?,"maxDepth"?,"limit"?}`. */
export function parseTraverseRequest(body: unknown): TraverseRequest {
  if (!isJsonObject(body)) throw invalid("the traverse body must be a JSON object");
  const direction = optionalString(body, "direction") ?? "out";
  if (direction !== "out" && direction !== "in" && direction !== "both") {
    throw invalid("direction is out, in or both");
  }
  const types = (optionalArray(body, "types") ?? []).map((type) => {
    if (typeof type !== "string") throw invalid("every edge type must be a string");
    return checkText("type", type, MAX_EDGE_TYPE_CHARS);
  });
  return {
    start: checkKey("start", requireString(body, "start")),
    direction,
    types,
    maxDepth:
      optionalInteger(body, "maxDepth", 1, READ_LIMITS.maxTraverseDepth) ?? READ_LIMITS.defaultTraverseDepth,
    limit:
      optionalInteger(body, "limit", 1, READ_LIMITS.maxTraverseNodes) ?? READ_LIMITS.defaultTraverseNodes,
  };
}

/** Directed, typed edges between catalog keys; each change also enters the tenant's change feed. */
export class Graph {
  private readonly insert: Database.Statement<[string, string, string, string, number]>;
  private readonly remove: Database.Statement<[string, string, string, string]>;

  constructor(
    db: Database.Database,
    private readonly feed: ChangeFeed,
  ) {
    this.insert = db.prepare(
      "INSERT OR IGNORE INTO edges (tenant, from_id, type, to_id, entry_index) VALUES (?, ?, ?, ?, ?)",
    );
    this.remove = db.prepare("DELETE FROM edges WHERE tenant = ? AND from_id = ? AND type = ? AND to_id = ?");
  }

  /** Idempotent: putting an existing edge succeeds with `created: false` and appends no change. */
  put(ctx: ApplyContext, edge: Edge): Edge & { created: boolean } {
    const created = this.insert.run(ctx.tenant, edge.from, edge.type, edge.to, ctx.index).changes > 0;
    if (created) this.feed.append(ctx, "edge.put", edge.from, null, edgeJson(edge));
    return { ...edge, created };
  }

  delete(ctx: ApplyContext, edge: Edge): Edge {
    if (this.remove.run(ctx.tenant, edge.from, edge.type, edge.to).changes === 0) {
      throw new NotFoundError(`no edge ${edge.from} -[${edge.type}]-> ${edge.to}`, {
        reason: "EdgeNotFound",
      });
    }
    this.feed.append(ctx, "edge.delete", edge.from, null, edgeJson(edge));
    return edge;
  }
}

function edgeJson(edge: Edge): string {
  return JSON.stringify({ from: edge.from, type: edge.type, to: edge.to });
}
