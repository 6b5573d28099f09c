/**
 * A child process for the log-and-apply crash test: one voter's persistence path without the network.
 * It opens the durable log in <dir>/log and the state in <dir>/state.db (argv[2]), replays what the
 * log committed, then takes the planned log (argv[3], one entry a line) batch by batch: appends the
 * batch with its commit index (one fsync), prints "acked N", applies it, prints "applied N" (the
 * applied index the state database holds), and snapshots when the policy says so, compacting the log
 * behind. Given argv[5] = K it kills itself (SIGKILL) after the K-th batch's fsync and before that
 * batch's apply.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SeededRandom } from "../../raft/seeded-random.js";
import type { Entry } from "../../raft/types.js";
import { DurableLogStore } from "../../storage/durable-log-store.js";
import { DurableLogWriter } from "../../storage/durable-log-writer.js";
import { SnapshotPolicy } from "../../storage/snapshot-policy.js";
import { StateMachine } from "../state-machine.js";
import {
  CRASH_CHECKPOINT_BYTES,
  CRASH_CONF,
  CRASH_LIMITS,
  CRASH_SNAPSHOT_POLICY,
  decodeLogLine,
} from "./crash-log.js";
import { replayCommitted } from "./log-replay.js";
import { TEST_KEY_HASHER } from "./state-fixtures.js";

const [dir, logPath, seed, killAfter] = process.argv.slice(2) as [string, string, string, string?];
const planned: Entry[] = readFileSync(logPath, "utf8").trim().split("\n").map(decodeLogLine);
const store = DurableLogStore.open(join(dir, "log"), { conf: CRASH_CONF, journalBytes: 64 * 1024 });
const writer = new DurableLogWriter(store, new SnapshotPolicy(CRASH_SNAPSHOT_POLICY));
const sm = StateMachine.open({
  keyHasher: TEST_KEY_HASHER,
  path: join(dir, "state.db"),
  limits: CRASH_LIMITS,
  checkpointBytes: CRASH_CHECKPOINT_BYTES,
});
replayCommitted(store, sm);
const source = {
  createSnapshotFile: (path: string) => sm.createSnapshot(path),
  durablePosition: () => sm.durablePosition(),
};
const random = new SeededRandom(Number(seed));
const killAtBatch = killAfter === undefined ? null : Number(killAfter);
process.stdout.write("ready\n");
let batch = 0;
for (let last = store.lastIndex(); last < planned.length; ) {
  const entries = planned.slice(last, last + 1 + random.nextInt(32));
  const tail = entries[entries.length - 1]!;
  last = tail.index;
  await writer.write({ snapshot: null, entries, hardState: { term: tail.term, vote: "n1", commit: last } });
  process.stdout.write(`acked ${last}\n`);
  if (++batch === killAtBatch) process.kill(process.pid, "SIGKILL");
  sm.applyBatch(entries);
  // What the state database holds, which a kill keeps: applies commit in groups (see ApplyCommits).
  process.stdout.write(`applied ${sm.savedIndex()}\n`);
  await writer.maybeSnapshot(source, () => CRASH_CONF, sm.applied().index);
}
await writer.close();
await sm.close();
