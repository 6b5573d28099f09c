export { bootstrapState } from "./bootstrap.js";
export type { BootstrapConf, ConfChange, ConfEntry } from "./conf-change.js";
export { entryChecksum } from "./entry-checksum.js";
export * from "./errors.js";
export { entrySize, type LogStorage, limitSize } from "./log-storage.js";
export { fillChunkFromMemory, MemorySnapshotSink } from "./memory-snapshot-sink.js";
export { MemoryStorage } from "./memory-storage.js";
export {
  RAFT_DEFAULTS,
  type RaftOptions,
  type ResolvedRaftOptions,
  resolveRaftOptions,
} from "./raft-config.js";
export { RaftNode, type RaftStatus } from "./raft-node.js";
export { SeededRandom } from "./seeded-random.js";
export { type SnapshotChunkSink, SnapshotInbox } from "./snapshot-inbox.js";
export type * from "./types.js";
export { canSendBeforePersist } from "./types.js";
