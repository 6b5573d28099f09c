import { describe, expect, it, vi } from "vitest";
import type { ApplyResult } from "../state/apply-result.js";
import type { RaftDriver } from "./raft-driver.js";
import { clusterPerTest, entry, sendsAndApplies } from "./test-fixtures/cluster-per-test.js";

vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });

const startCluster = clusterPerTest();

/** Records, in order, each append the leader sends and each batch it applies, by entry index. */
const trace = (driver: RaftDriver): string[] =>
  sendsAndApplies(driver, (m) => (m.type === "append" ? m.entries.map((e) => `send ${e.index}`) : []));

describe("a leader's apply of a committed batch", () => {
  it("waits until the next batch, proposed on hearing of the commit, is on its way to the followers", async () => {
    const cluster = await startCluster();
    const driver = cluster.voter(await cluster.waitForLeader()).driver;
    const events = trace(driver);
    let second: Promise<ApplyResult[]> | undefined;
    const first = driver.propose([entry(), entry()], undefined, () => {
      queueMicrotask(() => {
        second = driver.propose([entry()], undefined, () => false);
      });
      return true;
    });
    const [a] = await first;
    expect(second).toBeDefined();
    const [b] = await second!;
    const [aIndex, bIndex] = [a!.entryIndex + 1, b!.entryIndex];
    expect(bIndex).toBe(aIndex + 1);
    // Sent to both followers before the first batch is applied, applied in log order after it.
    const firstSend = events.indexOf(`send ${bIndex}`);
    expect(firstSend).toBeGreaterThanOrEqual(0);
    expect(firstSend).toBeLessThan(events.indexOf(`apply ${aIndex}`));
    expect(events.indexOf(`apply ${aIndex}`)).toBeLessThan(events.indexOf(`apply ${bIndex}`));
  });

  it("applies the entries a batch names ahead at its commit, before the next batch goes out, and the rest after", async () => {
    const cluster = await startCluster();
    const driver = cluster.voter(await cluster.waitForLeader()).driver;
    const events = trace(driver);
    let second: Promise<ApplyResult[]> | undefined;
    const first = driver.propose(
      [entry(), entry(), entry()],
      undefined,
      () => {
        queueMicrotask(() => {
          second = driver.propose([entry()], undefined, () => false);
        });
        return true;
      },
      { count: 1, settle: (i, result) => events.push(`ahead ${i} ${result.entryIndex}`) },
    );
    const [a, , c] = await first;
    const [b] = await second!;
    const [aIndex, cIndex, bIndex] = [a!.entryIndex, c!.entryIndex, b!.entryIndex];
    expect(cIndex).toBe(aIndex + 2);
    expect(bIndex).toBe(cIndex + 1);
    // The entry ahead is applied and reported at the commit; the others after the next batch's send.
    const sendNext = events.indexOf(`send ${bIndex}`);
    expect(events.indexOf(`apply ${aIndex}`)).toBeLessThan(events.indexOf(`ahead 0 ${aIndex}`));
    expect(events.indexOf(`ahead 0 ${aIndex}`)).toBeLessThan(sendNext);
    expect(sendNext).toBeLessThan(events.indexOf(`apply ${aIndex + 1}`));
    expect(events.indexOf(`apply ${cIndex}`)).toBeLessThan(events.indexOf(`apply ${bIndex}`));
    expect(events.filter((e) => e.startsWith("ahead"))).toEqual([`ahead 0 ${aIndex}`]);
  });

  it("is not held back when nothing else is proposed", async () => {
    const cluster = await startCluster();
    const driver = cluster.voter(await cluster.waitForLeader()).driver;
    const events = trace(driver);
    let told = 0;
    const [a] = await driver.propose([entry()], undefined, () => {
      told++;
      return false;
    });
    expect(told).toBe(1);
    expect(events).toContain(`apply ${a!.entryIndex}`);
    expect(driver.raft.status().commit).toBeGreaterThanOrEqual(a!.entryIndex);
  });
});
