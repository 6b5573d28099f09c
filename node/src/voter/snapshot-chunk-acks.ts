import type { SnapshotInbox } from "../raft/snapshot-inbox.js";
import type { Message } from "../raft/types.js";
import type { FileSnapshotSink } from "./file-snapshot-sink.js";

/**
 * Sends `m`, except that a follower's acknowledgement of snapshot chunks leaves only once their bytes
 * are in the temporary file rather than queued for it: the leader's window of chunks in flight then
 * bounds what a disk slower than the network leaves waiting in memory. A chunk whose write failed is
 * never acknowledged, and `fail` hears of it at once: left to the seal, the failure would never be
 * reported, since the leader never sends past a window that is not acknowledged. The writes of a sink
 * aborted meanwhile (superseded, or no longer needed) fail as they should, which is no failure.
 */
export function sendOnceWritten(
  inbox: SnapshotInbox<FileSnapshotSink>,
  m: Message,
  send: (m: Message) => void,
  fail: (err: unknown) => void,
): void {
  const sink = m.type === "snapshot-chunk-response" && !m.reject ? inbox.sinkInUse() : null;
  if (sink === null) {
    send(m);
    return;
  }
  sink.written().then(
    () => send(m),
    (err: unknown) => {
      if (!sink.aborted) fail(err);
    },
  );
}
