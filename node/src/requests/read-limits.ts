// The contract holds the read bounds, since the request schemas name the ones a client may ask up to.
export { READ_LIMITS } from "@keyload/contract";

/** The bounds one page of a bulk get, query, search or traversal stops at (tests pass smaller ones). */
export type PageBounds = {
  readonly [K in "maxScanRows" | "maxTraverseEdges" | "maxPageBytes"]: number;
};
