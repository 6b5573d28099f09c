import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import type { Entry } from "../raft/types.js";
import { DurableLogStore } from "../storage/durable-log-store.js";
import { StateMachine } from "./state-machine.js";
import { CRASH_CONF, CRASH_LIMITS, encodeLogLine } from "./test-fixtures/crash-log.js";
import { replayCommitted } from "./test-fixtures/log-replay.js";
import { randomLog } from "./test-fixtures/random-log.js";
import { TEST_KEY_HASHER, TempStates } from "./test-fixtures/state-fixtures.js";
import { runStateMachineCrashChild } from "./test-fixtures/state-machine-crash-runner.js";

interface ChildRun {
  /** The last index the child reported durable in its log (acknowledged), and held by its state. */
  readonly acked: number;
  readonly applied: number;
  /** True when the child went through the whole log without being killed. */
  readonly done: boolean;
}

/**
 * Runs the log-and-apply child on `dir`. It is killed `afterMs` after it reports ready, or kills
 * itself after the fsync of its `batch`-th write, before applying that write.
 */
async function runChild(
  dir: string,
  logPath: string,
  seed: number,
  kill: { readonly afterMs: number } | { readonly batch: number },
): Promise<ChildRun> {
  const args = [dir, logPath, String(seed), ...("batch" in kill ? [String(kill.batch)] : [])];
  let acked = 0;
  let applied = 0;
  const exit = await runStateMachineCrashChild("log-apply-child.ts", args, (line, child) => {
    const [what, at] = line.split(" ");
    if (what === "ready" && "afterMs" in kill) setTimeout(() => child.kill("SIGKILL"), kill.afterMs);
    else if (what === "acked") acked = Number(at);
    else if (what === "applied") applied = Number(at);
  });
  if (exit.signal !== "SIGKILL" && exit.code !== 0) {
    throw new Error(`the log-and-apply child exited with code ${exit.code}`);
  }
  return { acked, applied, done: exit.code === 0 };
}

function sameEntry(a: Entry, b: Entry): boolean {
  return (
    a.index === b.index &&
    a.term === b.term &&
    a.type === b.type &&
    Buffer.compare(Buffer.from(a.data), Buffer.from(b.data)) === 0
  );
}

describe("crash recovery of the log and the state together", () => {
  const temp = new TempStates();
  afterAll(() => temp.cleanup());

  it("loses nothing acknowledged when killed between the log's fsync and the apply, or anywhere", async () => {
    const generator = temp.create("generator", CRASH_LIMITS);
    const log = randomLog(91, 4_000, (entry) => generator.apply(entry));
    const logPath = temp.path("planned.jsonl");
    writeFileSync(logPath, `${log.map(encodeLogLine).join("\n")}\n`);
    const dir = temp.path("voter");
    mkdirSync(dir);
    // The state every recovery must reproduce, advanced to each recovered index in turn.
    const oracle = temp.create("oracle", CRASH_LIMITS);
    const random = new SeededRandom(13);
    let betweenFsyncAndApply = 0;
    let snapshots = 0;
    for (let round = 0; round < 12; round++) {
      // The self-kills first: each stops within a dozen batches, so every one lands between a batch's
      // fsync and its apply, while timed kills on a fast machine may reach the end of the log.
      const selfKill = round < 6;
      const run = await runChild(
        dir,
        logPath,
        round,
        selfKill ? { batch: 1 + random.nextInt(12) } : { afterMs: 20 + random.nextInt(300) },
      );
      const store = DurableLogStore.open(join(dir, "log"), { conf: CRASH_CONF, journalBytes: 64 * 1024 });
      const sm = StateMachine.open({
        keyHasher: TEST_KEY_HASHER,
        path: join(dir, "state.db"),
        limits: CRASH_LIMITS,
      });
      try {
        // Everything acknowledged is in the log, exactly as planned; the state never runs ahead of it.
        const last = store.lastIndex();
        expect(last, `round ${round}`).toBeGreaterThanOrEqual(run.acked);
        expect(store.initialState().hardState.commit).toBe(last);
        const kept = store.entries(store.firstIndex(), last + 1, Number.POSITIVE_INFINITY);
        expect(kept.every((entry) => sameEntry(entry, log[entry.index - 1]!))).toBe(true);
        expect(sm.applied().index).toBeGreaterThanOrEqual(run.applied);
        expect(sm.applied().index).toBeLessThanOrEqual(last);
        if (selfKill && !run.done) {
          // The kill came after the batch's fsync and before its apply: the log is ahead of the state.
          expect(sm.applied().index).toBeLessThan(run.acked);
          betweenFsyncAndApply++;
        }
        if (store.snapshotIndex() > 0) snapshots++;

        replayCommitted(store, sm);
        expect(sm.applied().index).toBe(last);
        oracle.applyBatch(log.slice(oracle.applied().index, last));
        expect(sm.dump(), `round ${round}: state after replay to ${last}`).toBe(oracle.dump());
      } finally {
        await sm.close();
        await store.close();
      }
    }
    expect(betweenFsyncAndApply).toBe(6);
    expect(snapshots).toBeGreaterThan(0);

    // And the recovered voter goes on to the same final state as one that never crashed.
    const final = await runChild(dir, logPath, 99, { afterMs: 60_000 });
    expect(final.done).toBe(true);
    const sm = temp.create("voter/state", CRASH_LIMITS);
    expect(sm.applied().index).toBe(log.length);
    expect(sm.dump()).toBe(generator.dump());
  }, 120_000);
});
