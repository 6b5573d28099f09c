import { copyFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import type { Entry } from "../raft/types.js";
import type { ApplyResult } from "./apply-result.js";
import type { CanonicalLimits } from "./limits.js";
import type { StateMachine } from "./state-machine.js";
import { randomLog } from "./test-fixtures/random-log.js";
import { TempStates } from "./test-fixtures/state-fixtures.js";

/** Tight limits, so the log also runs outcome expiry, dead-lettering and lease-batch refusals. */
const LIMITS: Partial<CanonicalLimits> = {
  outcomeRetentionCommands: 2_000,
  outcomeRetentionMs: 600_000,
  maxDeliveryAttempts: 2,
  maxLeaseBatch: 3,
};

/** Applies entries in random batch sizes, as voters do: each Ready holds whatever had committed. */
function applyInBatches(sm: StateMachine, entries: readonly Entry[], seed: number): ApplyResult[] {
  const random = new SeededRandom(seed);
  const results: ApplyResult[] = [];
  for (let start = 0; start < entries.length; ) {
    const size = 1 + random.nextInt(64);
    results.push(...sm.applyBatch(entries.slice(start, start + size)));
    start += size;
  }
  return results;
}

describe("determinism", () => {
  const temp = new TempStates();
  let log: Entry[];
  let oracleResults: ApplyResult[];
  let reference: string;

  beforeAll(() => {
    const oracle = temp.create("oracle", LIMITS);
    oracleResults = [];
    log = randomLog(20261130, 10_000, (entry) => {
      const result = oracle.apply(entry);
      oracleResults.push(result);
      return result;
    });
    reference = oracle.dump();
  }, 60_000);
  afterAll(() => temp.cleanup());

  it("applies one random 10,000-entry log to fresh stores with byte-identical dumps and outcomes", () => {
    const a = temp.create("a", LIMITS);
    const b = temp.create("b", LIMITS);
    const resultsA = log.map((entry) => a.apply(entry));
    const resultsB = applyInBatches(b, log, 7);
    expect(a.applied()).toEqual({ index: log.length, term: log.at(-1)!.term });
    expect(a.dump()).toBe(reference);
    expect(b.dump()).toBe(reference);
    expect(JSON.stringify(resultsA)).toBe(JSON.stringify(oracleResults));
    expect(JSON.stringify(resultsB)).toBe(JSON.stringify(oracleResults));
  }, 60_000);

  it("covers every kind of outcome the state machine has", () => {
    const seen = new Set<string>();
    for (const result of oracleResults) {
      if (result.type !== "command") seen.add(result.type);
      else if (result.outcome.status === "failed") seen.add(result.outcome.error.code);
      else seen.add(result.duplicate ? "duplicate" : "committed");
    }
    expect([...seen].sort()).toEqual(
      [
        "CommandIdConflict",
        "FailedPrecondition",
        "InvalidArgument",
        "LeaseLost",
        "NotFound",
        "PermissionDenied",
        "Unauthenticated",
        "committed",
        "duplicate",
        "noop",
      ].sort(),
    );
    expect(reference).toMatch(/"jobs\.dead-letter"/);
  });

  it("installs a snapshot taken at N elsewhere and reaches the same state after the rest", async () => {
    const n = 6_000;
    const source = temp.create("source", LIMITS);
    applyInBatches(source, log.slice(0, n), 1);
    const snapshot = temp.path("snap.db");
    expect(await source.createSnapshot(snapshot)).toEqual({ index: n, term: log[n - 1]!.term });

    const target = temp.create("target", LIMITS);
    applyInBatches(target, log.slice(0, 100), 3);
    expect(target.restoreFromSnapshot(snapshot)).toEqual({ index: n, term: log[n - 1]!.term });
    expect(target.applied().index).toBe(n);
    applyInBatches(target, log.slice(n), 4);
    expect(target.dump()).toBe(reference);
  }, 60_000);

  it("replays after a crash that lost the last commits and reaches the same state", async () => {
    // The durable image at 4,000; the store goes on to 7,000, then "crashes" and loses what followed.
    const live = temp.create("live", LIMITS);
    applyInBatches(live, log.slice(0, 4_000), 6);
    await live.createSnapshot(temp.path("durable.db"));
    applyInBatches(live, log.slice(4_000, 7_000), 7);
    await live.close();
    copyFileSync(temp.path("durable.db"), temp.path("recovered.db"));

    const recovered = temp.create("recovered", LIMITS);
    expect(recovered.applied().index).toBe(4_000);
    // The driver replays the log from the start: entries up to 4,000 are skipped, the rest apply once.
    const results = recovered.applyBatch(log);
    expect(results.filter((r) => r.type === "skipped")).toHaveLength(4_000);
    expect(recovered.dump()).toBe(reference);
    recovered.applyBatch(log.slice(9_000));
    expect(recovered.dump()).toBe(reference);
  }, 60_000);
});
