import type { SnapshotInbox } from "../raft/snapshot-inbox.js";
import type { Message } from "../raft/types.js";
import type { FileSnapshotSink } from "./file-snapshot-sink.js";

/**
 * Sends `m`, except that a follower's acknowledgement of snapshot chunks leaves only once their bytes
 * are in the temporary file rather than queued for it: the leader's window of chunks in flight then
 * bounds what a disk slower than the network leaves waiting in memory. A chunk whose write failed is
 * never acknowledged; sealing the snapshot reports the failure.
 */
export function sendOnceWritten(
  inbox: SnapshotInbox<FileSnapshotSink>,
  m: Message,
  send: (m: Message) => void,
): void {
  const sink = m.type === "snapshot-chunk-response" && !m.reject ? inbox.sinkInUse() : null;
  if (sink === null) {
    send(m);
    return;
  }
  sink.written().then(
    () => send(m),
    () => undefined,
  );
}
