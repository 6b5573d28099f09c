/**
 * Elections within a second and heartbeats every 50 ms, so a fault test sees several leader changes
 * in a few seconds.
 */
export const FAST_RAFT = {
  KeyLoad__Raft__ElectionTimeoutMs: "500",
  KeyLoad__Raft__HeartbeatIntervalMs: "50",
} as const;
