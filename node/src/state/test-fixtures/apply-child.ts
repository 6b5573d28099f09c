/**
 * A child process for crash tests: opens the state at argv[2], applies the log in argv[3] (one entry a
 * line, JSON with base64 data) in batches of varying size, and prints the applied index the database
 * holds (what a crash keeps: applies commit in groups) after each batch, until its parent kills it.
 * Its state checkpoints in small cycles, so that the kills also land inside them.
 */
import { readFileSync } from "node:fs";
import { SeededRandom } from "../../raft/seeded-random.js";
import type { Entry } from "../../raft/types.js";
import { StateMachine } from "../state-machine.js";
import { CRASH_CHECKPOINT_BYTES, CRASH_LIMITS, decodeLogLine } from "./crash-log.js";
import { TEST_KEY_HASHER } from "./state-fixtures.js";

const [path, logPath, seed] = process.argv.slice(2) as [string, string, string];
const entries: Entry[] = readFileSync(logPath, "utf8").trim().split("\n").map(decodeLogLine);
const sm = StateMachine.open({
  keyHasher: TEST_KEY_HASHER,
  path,
  limits: CRASH_LIMITS,
  checkpointBytes: CRASH_CHECKPOINT_BYTES,
});
const random = new SeededRandom(Number(seed));
for (let start = sm.applied().index; start < entries.length; ) {
  const size = 1 + random.nextInt(32);
  sm.applyBatch(entries.slice(start, start + size));
  start += size;
  process.stdout.write(`${sm.savedIndex()}\n`);
  // A turn of the event loop between batches, as the voter's driver gives: the state's background
  // checkpoints then run their cycles, and the kills land inside them too.
  await new Promise((resolve) => setImmediate(resolve));
}
// Closing commits what the last group still held: the database then holds every applied entry.
const applied = sm.applied().index;
await sm.close();
process.stdout.write(`${applied}\n`);
