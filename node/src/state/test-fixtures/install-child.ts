/**
 * A child process for the snapshot install crash test: opens the state at argv[2] and installs the
 * snapshot files argv[3] and argv[4] in turn, again and again, until its parent kills it. Prints
 * "ready" once open, "installing N" before each install and "installed N" after it (N: 1 or 2).
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { StateMachine } from "../state-machine.js";
import { CRASH_LIMITS } from "./crash-log.js";
import { TEST_KEY_HASHER } from "./state-fixtures.js";

const [path, ...snapshots] = process.argv.slice(2) as [string, string, string];
const sm = StateMachine.open({ path, limits: CRASH_LIMITS, keyHasher: TEST_KEY_HASHER });
process.stdout.write("ready\n");
for (let round = 0; ; round++) {
  const which = (round % snapshots.length) + 1;
  process.stdout.write(`installing ${which}\n`);
  sm.restoreFromSnapshot(snapshots[which - 1]!);
  process.stdout.write(`installed ${which}\n`);
  // Lets the search index's rebuild messages go out, as they would between a voter's installs.
  await nextTurn();
}
