export type { DurableLogStoreOptions } from "./durable-log-options.js";
export { DurableLogStore, type StorageStats, type StoreOp } from "./durable-log-store.js";
export { DurableLogWriter, type LogWrite } from "./durable-log-writer.js";
export type { FaultHook, StorageFaultPoint } from "./fault-hook.js";
export { LOG_FILE, SNAPSHOT_DIR, WATERMARK_FILE } from "./log-recovery.js";
export { type SnapshotFile, SnapshotFileStore } from "./snapshot-file-store.js";
export {
  DEFAULT_SNAPSHOT_POLICY,
  SnapshotPolicy,
  type SnapshotPolicyLog,
  type SnapshotPolicyOptions,
} from "./snapshot-policy.js";
export { SnapshotReader } from "./snapshot-reader.js";
export { SnapshotReceiver } from "./snapshot-receiver.js";
export type { SnapshotSource, SnapshotTarget } from "./snapshot-source.js";
export * from "./storage-errors.js";
