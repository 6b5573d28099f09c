/**
 * Bounds on what one read may return or visit. Reads change no state, so unlike the canonical limits these
 * need not match between voters; they are constants so a heavy read's cost stays within what HTTP
 * admission reserves for it. The request schemas name the bounds a client may ask up to.
 */
export const READ_LIMITS = {
  maxBulkKeys: 1000,
  maxQueryResults: 1000,
  defaultQueryResults: 100,
  maxQueryFilters: 16,
  maxSearchResults: 1000,
  defaultSearchResults: 20,
  maxTraverseDepth: 16,
  defaultTraverseDepth: 2,
  maxTraverseNodes: 10_000,
  defaultTraverseNodes: 1000,
  maxDispatchRead: 1000,
  defaultDispatchRead: 100,
  /**
   * Bytes of directive data (as stored) one dispatch read answers, at least one directive however large.
   * The read is a control request, which reserves no working space, and runs on the voter's event loop;
   * a directive's stored JSON may be several times its payload's (`1e20` is written out in full).
   */
  maxDispatchPageBytes: 1024 * 1024,
  /**
   * Rows (documents, tombstones included) one query page examines, whether its filters match or not:
   * past it the page ends, short or even empty, with a cursor.
   */
  maxScanRows: 10_000,
  /** Edges one traversal follows, of its types or not, before it stops as truncated. */
  maxTraverseEdges: 100_000,
  /**
   * Bytes of JSON one page answers. A page's text is held about four times over (the rows read, the
   * answer built from them, its copy on the event loop and the bytes sent), so a quarter of the heavy
   * read's modeled 64 MiB. A single larger document is still answered, alone on its page.
   */
  maxPageBytes: 16 * 1024 * 1024,
} as const;
