import { existsSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import { CRASH_LIMITS } from "./test-fixtures/crash-log.js";
import { randomLog } from "./test-fixtures/random-log.js";
import { TempStates } from "./test-fixtures/state-fixtures.js";
import { runStateMachineCrashChild } from "./test-fixtures/state-machine-crash-runner.js";

/**
 * Runs the install child on `path` and kills it `afterMs` after it is ready. Resolves with the last
 * line it printed: "installing N" when the kill came in the middle of an install.
 */
async function installUntilKilled(
  path: string,
  snapshots: readonly string[],
  afterMs: number,
): Promise<string> {
  let last = "";
  const exit = await runStateMachineCrashChild("install-child.ts", [path, ...snapshots], (line, child) => {
    if (line === "ready") setTimeout(() => child.kill("SIGKILL"), afterMs);
    last = line;
  });
  if (exit.signal !== "SIGKILL") throw new Error(`the install child exited with code ${exit.code}`);
  return last;
}

describe("a crash during a snapshot install", () => {
  const temp = new TempStates();
  afterAll(() => temp.cleanup());

  it("leaves the old state or the new one, whole and usable, wherever it lands", async () => {
    const generator = temp.create("generator", CRASH_LIMITS);
    const log = randomLog(31, 4_000, (entry) => generator.apply(entry));
    // Three states of one log: the one installed over (at 1,000) and two snapshots (at 2,500 and 4,000).
    const source = temp.create("source", CRASH_LIMITS);
    const dumps = new Map<number, string>();
    const snapshots: string[] = [];
    for (const [n, name] of [
      [1_000, null],
      [2_500, "snap-1.db"],
      [4_000, "snap-2.db"],
    ] as const) {
      source.applyBatch(log.slice(source.applied().index, n));
      dumps.set(n, source.dump());
      if (name === null) {
        await source.createSnapshot(temp.path("crashing.db"));
        continue;
      }
      expect((await source.createSnapshot(temp.path(name))).index).toBe(n);
      snapshots.push(temp.path(name));
    }

    const random = new SeededRandom(3);
    let midInstall = 0;
    const seen = new Set<number>();
    for (let round = 0; round < 10; round++) {
      const last = await installUntilKilled(temp.path("crashing.db"), snapshots, 50 + random.nextInt(400));
      if (last.startsWith("installing")) midInstall++;
      const sm = temp.create("crashing", CRASH_LIMITS);
      const at = sm.applied().index;
      expect(dumps.has(at), `round ${round}: reopened at ${at}`).toBe(true);
      expect(sm.dump(), `round ${round}: the state at ${at}`).toBe(dumps.get(at));
      expect(existsSync(temp.path("crashing.db.installing"))).toBe(false);
      seen.add(at);
      await sm.close();
    }
    expect(midInstall).toBeGreaterThanOrEqual(5);
    expect(seen.size).toBeGreaterThan(1);

    // Whichever state survived, it goes on applying the log to the same end.
    const survivor = temp.create("crashing", CRASH_LIMITS);
    const at = survivor.applied().index;
    if (at < log.length) survivor.applyBatch(log.slice(at));
    expect(survivor.dump()).toBe(generator.dump());
  }, 120_000);
});
