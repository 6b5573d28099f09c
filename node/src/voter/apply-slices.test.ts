import { describe, expect, it, vi } from "vitest";
import type { Entry } from "../raft/types.js";
import { APPLY_SLICE_BYTES, applySliceEnd } from "./apply-slices.js";
import { clusterPerTest, driverParts } from "./test-fixtures/cluster-per-test.js";

vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });

const startCluster = clusterPerTest();

const sized = (...sizes: number[]): Entry[] =>
  sizes.map((size, i) => ({ index: i + 1, term: 1, type: "normal", data: new Uint8Array(size) }) as Entry);

describe("applySliceEnd", () => {
  it("ends a slice with the entry that brings it to the limit, and keeps small batches whole", () => {
    expect(applySliceEnd(sized(100, 100, 100), 250)).toBe(3);
    expect(applySliceEnd(sized(100, 150, 100), 250)).toBe(2);
    expect(applySliceEnd(sized(100, 100), 250)).toBe(2);
    expect(applySliceEnd(sized(1_000, 10), 250)).toBe(1);
    expect(applySliceEnd([], 250)).toBe(0);
    expect(applySliceEnd(sized(...Array(32).fill(1024)))).toBe(32);
  });
});

describe("a voter's apply of a large batch", () => {
  it("goes in slices, with a turn of the event loop between them, in order, on every voter", async () => {
    const cluster = await startCluster();
    const leader = cluster.voter(await cluster.waitForLeader()).driver;
    const entryBytes = 192 * 1024;
    const calls: { indexes: number[]; bytes: number; timerFired: boolean }[][] = [[], [], []];
    for (const v of [0, 1, 2]) {
      const { stateMachine } = driverParts(cluster.voter(v).driver);
      const applyBatch = stateMachine.applyBatch.bind(stateMachine);
      let timerFired = false;
      vi.spyOn(stateMachine, "applyBatch").mockImplementation((entries) => {
        const big = entries as readonly Entry[];
        const bytes = big.reduce((n, e) => n + e.data.byteLength, 0);
        if (bytes >= entryBytes) {
          calls[v]!.push({ indexes: big.map((e) => e.index), bytes, timerFired });
          // A timer set as the first large apply starts fires only if the loop turns before the last.
          if (calls[v]!.length === 1) setTimeout(() => (timerFired = true), 0);
          // As long as a real apply of that much would take: the timer is due by the next turn.
          const until = performance.now() + 3;
          while (performance.now() < until);
        }
        return applyBatch(entries);
      });
    }
    const data = Array.from({ length: 8 }, () => new Uint8Array(entryBytes).fill(0x20));
    const results = await leader.propose(data);
    const indexes = results.map((r) => r.entryIndex);
    for (const v of [0, 1, 2]) {
      const driver = cluster.voter(v).driver;
      await vi.waitFor(() => expect(driver.status().applied).toBeGreaterThanOrEqual(indexes.at(-1)!), {
        timeout: 5_000,
      });
      const seen = calls[v]!;
      expect(seen.flatMap((c) => c.indexes)).toEqual(indexes);
      for (const call of seen) expect(call.bytes - entryBytes).toBeLessThan(APPLY_SLICE_BYTES);
      expect(seen.length).toBeGreaterThanOrEqual(3);
      expect(seen.at(-1)!.timerFired).toBe(true);
    }
  });
});
