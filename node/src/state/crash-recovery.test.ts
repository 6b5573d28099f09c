import { writeFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import type { Entry } from "../raft/types.js";
import { parseSearchRequest } from "./search-query.js";
import { CRASH_LIMITS, encodeLogLine } from "./test-fixtures/crash-log.js";
import { randomLog } from "./test-fixtures/random-log.js";
import { TempStates } from "./test-fixtures/state-fixtures.js";
import { runStateMachineCrashChild } from "./test-fixtures/state-machine-crash-runner.js";

/** Runs the apply child until it reports an applied index of at least `killAt`, then kills it (-9). */
async function applyUntilKilled(
  path: string,
  logPath: string,
  seed: number,
  killAt: number,
): Promise<number> {
  let reported = 0;
  await runStateMachineCrashChild("apply-child.ts", [path, logPath, String(seed)], (line, child) => {
    reported = Number(line);
    if (reported >= killAt) child.kill("SIGKILL");
  });
  return reported;
}

describe("crash recovery", () => {
  const temp = new TempStates();
  afterAll(() => temp.cleanup());

  it("survives kill -9 at random points: nothing reported applied is lost, replay converges", async () => {
    const oracle = temp.create("oracle", CRASH_LIMITS);
    const log: Entry[] = randomLog(77, 3_000, (entry) => oracle.apply(entry));
    const logPath = temp.path("log.jsonl");
    writeFileSync(logPath, `${log.map(encodeLogLine).join("\n")}\n`);
    const path = temp.path("crashing.db");
    const random = new SeededRandom(5);
    let reported = 0;
    for (let round = 1; round <= 4; round++) {
      const killAt = Math.min(log.length, reported + 200 + random.nextInt(500));
      const lastReported = await applyUntilKilled(path, logPath, round, killAt);
      expect(lastReported).toBeGreaterThanOrEqual(killAt);
      // Reopened between kills: a committed batch is never lost, and the state is a prefix of the log.
      const sm = temp.create("crashing", CRASH_LIMITS);
      expect(sm.applied().index).toBeGreaterThanOrEqual(lastReported);
      reported = sm.applied().index;
      await sm.close();
    }
    const recovered = temp.create("crashing", CRASH_LIMITS);
    recovered.applyBatch(log);
    expect(recovered.dump()).toBe(oracle.dump());
    // The search index, killed along with its worker, is rebuilt to match.
    for (const query of ["alpha", "beta", "gamma"]) {
      const request = parseSearchRequest({ query, limit: 100 });
      for (const tenant of ["t1", "t2", "t3"]) {
        expect((await recovered.search(tenant, request)).text).toBe(
          (await oracle.search(tenant, request)).text,
        );
      }
    }
  }, 60_000);
});
