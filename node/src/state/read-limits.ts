/**
 * Bounds on what one read may return or visit. Reads change no state, so unlike the canonical limits these
 * need not match between voters; they are constants so a heavy read's cost stays within what HTTP
 * admission reserves for it.
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
} as const;
