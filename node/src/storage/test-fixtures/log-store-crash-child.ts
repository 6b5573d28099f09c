/**
 * The process the log store's crash tests kill (see runLogStoreCrashChild). Modes:
 *   append <dir> <seed>             writes crashWorkload(seed) until killed, reporting each acknowledged write
 *   install <dir> <seed> <point>    installs two leader snapshots, killing itself at <point> in the second
 *   create <dir> <seed> <point>     records two local snapshots, killing itself at <point> in the second
 *   point <dir> <seed> <point>      records a local snapshot, then a snapshot point with no file and
 *                                   compacts behind it, killing itself at <point> in the point's record
 * Messages to the parent: { ready: true } once open, { acked: n } per acknowledged write, { done: true }.
 */
import { writeFileSync } from "node:fs";
import { crc32c } from "../../checksum/crc32c.js";
import type { SnapshotMeta } from "../../raft/types.js";
import { DurableLogStore } from "../durable-log-store.js";
import { DurableLogWriter } from "../durable-log-writer.js";
import type { StorageFaultPoint } from "../fault-hook.js";
import type { SnapshotFile } from "../snapshot-file-store.js";
import { SnapshotPolicy } from "../snapshot-policy.js";
import { crashWorkload } from "./crash-workload.js";
import { CONF, dataFor, entries, hs } from "./storage-fixture.js";

const [mode, dir, seedArg, point] = process.argv.slice(2);
const seed = Number(seedArg);
let armed = false;
const send = (msg: object): void => {
  process.send?.(msg);
};
process.on("disconnect", () => process.exit(0));

const store = DurableLogStore.open(dir!, {
  conf: CONF,
  cacheEntries: 64,
  checkpointBytes: 256 * 1024,
  // Small journal files: kills land around switches between them, and in their background fsyncs.
  journalBytes: 64 * 1024,
  faultHook: (p: StorageFaultPoint) => {
    if (armed && p === point) process.kill(process.pid, "SIGKILL");
  },
});
// In point mode a snapshot is due every 10 entries, and 5 are kept behind one.
const policy = new SnapshotPolicy({ entries: 10, bytes: 1 << 30, retainEntries: 5 });
const writer = new DurableLogWriter(store, mode === "point" ? policy : undefined);
send({ ready: true });

if (mode === "append") {
  const workload = crashWorkload(seed, {
    lastIndex: store.lastIndex(),
    hardState: store.initialState().hardState,
  });
  let issued = 0;
  for (let burst = 0; burst < 100_000; burst++) {
    const writes = [];
    for (let i = 1 + (burst % 4); i > 0; i--) {
      const n = ++issued;
      writes.push(writer.write(workload.next().value).then(() => send({ acked: n })));
    }
    await Promise.all(writes);
  }
} else if (mode === "install") {
  await writer.write({ snapshot: null, entries: entries(1, 30, 1, 500), hardState: hs(1, "n1", 30) });
  const snapA = await receiveInChunks({ index: 40, term: 2, conf: CONF }, dataFor(40, 2, 70_000));
  await writer.write({ snapshot: snapA, entries: entries(41, 45, 2), hardState: hs(2, "n2", 40) });
  armed = true;
  const snapB = await receiveInChunks({ index: 80, term: 3, conf: CONF }, dataFor(80, 3, 90_000));
  await writer.write({ snapshot: snapB, entries: entries(81, 85, 3), hardState: hs(3, null, 80) });
} else if (mode === "create" || mode === "point") {
  await writer.write({ snapshot: null, entries: entries(1, 50, 1, 500), hardState: hs(1, "n1", 50) });
  const source = (index: number) => ({
    async createSnapshotFile(path: string) {
      writeFileSync(path, dataFor(index, 1, 60_000));
      return { index, term: 1 };
    },
    durablePosition: async () => ({ index, term: 1 }),
  });
  await writer.createSnapshot(source(20), () => CONF);
  armed = true;
  if (mode === "create") await writer.createSnapshot(source(40), () => CONF);
  else await writer.maybeSnapshot(source(40), () => CONF, 50);
}
// Reached only when the fault point never came: the parent reports that.
process.send?.({ done: true }, () => process.exit(0));

/** Receives a snapshot as a follower does, chunk by chunk into a temporary file, then seals it. */
async function receiveInChunks(meta: SnapshotMeta, data: Uint8Array): Promise<SnapshotFile> {
  const receiver = store.snapshotFiles.receive(meta, data.byteLength);
  for (let at = 0; at < data.byteLength; at += 16_384) {
    await receiver.write(at, data.subarray(at, Math.min(data.byteLength, at + 16_384)));
  }
  return receiver.finish(crc32c(data));
}
