import type Database from "better-sqlite3";
import { type PageBounds, READ_LIMITS } from "../requests/read-limits.js";
import type { Direction, Edge, TraverseRequest } from "./graph.js";
import { JsonPage } from "./json-page.js";

export interface TraversedNode {
  readonly id: string;
  readonly depth: number;
  /** The edge through which breadth-first search first reached the node; null for the start. */
  readonly via: Edge | null;
}

/**
 * Breadth-first traversal of one tenant's edges, answered as JSON text `{"nodes":[...],"truncated"}`.
 * It runs on the read worker's own connection (see CatalogReader). `truncated` says the search stopped
 * before it was done: at the request's node limit, at maxTraverseEdges edges followed (those of other
 * types and those to nodes already seen count too) or at the page's byte bound.
 */
export class GraphTraversal {
  private readonly outbound: Database.Statement<[string, string], { type: string; other: string }>;
  private readonly inbound: Database.Statement<[string, string], { type: string; other: string }>;

  constructor(
    db: Database.Database,
    private readonly bounds: PageBounds = READ_LIMITS,
  ) {
    this.outbound = db.prepare(
      "SELECT type, to_id AS other FROM edges WHERE tenant = ? AND from_id = ? ORDER BY type, to_id",
    );
    this.inbound = db.prepare(
      "SELECT type, from_id AS other FROM edges WHERE tenant = ? AND to_id = ? ORDER BY type, from_id",
    );
  }

  /** Neighbours in (type, id) order, so the answer is the same on every voter. */
  traverse(tenant: string, request: TraverseRequest): string {
    const wanted = new Set(request.types);
    const seen = new Set([request.start]);
    const page = new JsonPage(this.bounds.maxPageBytes);
    page.add(nodeJson({ id: request.start, depth: 0, via: null }));
    const answer = (truncated: boolean): string => `{"nodes":${page.array()},"truncated":${truncated}}`;
    let followed = 0;
    let frontier = [request.start];
    for (let depth = 1; depth <= request.maxDepth && frontier.length > 0; depth++) {
      const next: string[] = [];
      for (const id of frontier) {
        for (const edge of this.neighbours(tenant, id, request.direction)) {
          if (++followed > this.bounds.maxTraverseEdges) return answer(true);
          const other = edge.from === id ? edge.to : edge.from;
          if ((wanted.size > 0 && !wanted.has(edge.type)) || seen.has(other)) continue;
          if (page.count >= request.limit) return answer(true);
          if (!page.add(nodeJson({ id: other, depth, via: edge }))) return answer(true);
          seen.add(other);
          next.push(other);
        }
      }
      frontier = next;
    }
    return answer(false);
  }

  private *neighbours(tenant: string, id: string, direction: Direction): Generator<Edge> {
    if (direction !== "in") {
      for (const row of this.outbound.iterate(tenant, id)) yield { from: id, type: row.type, to: row.other };
    }
    if (direction !== "out") {
      for (const row of this.inbound.iterate(tenant, id)) yield { from: row.other, type: row.type, to: id };
    }
  }
}

function nodeJson(node: TraversedNode): string {
  return JSON.stringify(node);
}
