import { InternalError } from "@keyload/contract";
import { describe, expect, it, vi } from "vitest";
import { StorageFailedError } from "../storage/storage-errors.js";
import { clusterPerTest, driverParts } from "./test-fixtures/cluster-per-test.js";
import {
  capStateDatabase,
  type IoErrorCode,
  restartWithFaults,
  StorageFault,
  sendsAfterFailure,
  stateDump,
} from "./test-fixtures/storage-faults.js";
import { call, type VoterCluster } from "./test-fixtures/voter-cluster.js";
import type { VoterFailedError } from "./voter-failed-error.js";

vi.setConfig({ testTimeout: 60_000, hookTimeout: 30_000 });

const startCluster = clusterPerTest();
const ELECTION_TIMEOUT_MS = 300;

async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function until(condition: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const put = (url: string, key: string, value: unknown, commandId: string) =>
  call(url, "PUT", `/v1/catalog/${encodeURIComponent(key)}`, { body: { value }, commandId });

/** The voter other than `failed` that leads the two left, once both follow it. */
async function survivorLeader(cluster: VoterCluster, failed: number): Promise<number> {
  const others = [0, 1, 2].filter((i) => i !== failed);
  let leader = -1;
  await until(() => {
    leader = others.find((i) => cluster.voter(i).driver.isLeader()) ?? -1;
    return (
      leader >= 0 &&
      others.every((i) => cluster.voter(i).driver.status().leader === cluster.voter(leader).nodeId)
    );
  }, "a leader among the two voters left");
  return leader;
}

/**
 * What holds of a voter once it failed: not live, refuses writes, takes no part in Raft any more
 * (its term stays while the others go on), while the two others keep serving.
 */
async function expectStoppedWhileOthersServe(
  cluster: VoterCluster,
  failed: number,
  sent: { readonly count: number },
  termAtFailure: number,
): Promise<number> {
  const voter = cluster.voter(failed);
  const live = await call(voter.httpUrl, "GET", "/health/live", { key: null });
  expect(live.status).toBe(503);
  expect(live.body).toMatchObject({
    error: { reason: "NotLive", details: { failed: { code: "VoterFailed" } } },
  });
  const refused = await put(voter.httpUrl, "through-the-failed-voter", 1, "through-failed");
  expect(refused.status).not.toBe(200);

  const leader = await survivorLeader(cluster, failed);
  const url = cluster.voter(leader).httpUrl;
  for (let n = 0; n < 20; n++) {
    const r = await put(url, `after-${n}`, n, `after-${n}`);
    expect(r.status).toBe(200);
  }
  // Several election timeouts: a core still ticking or stepping would campaign or follow a new term.
  await new Promise((resolve) => setTimeout(resolve, 4 * ELECTION_TIMEOUT_MS));
  expect(voter.driver.raft.status().term).toBe(termAtFailure);
  expect(sent.count).toBe(0);
  return leader;
}

/** Restarts the failed voter (its fault gone) and waits until all three hold the same state. */
async function expectRecovers(cluster: VoterCluster, failed: number): Promise<void> {
  await cluster.restart(failed);
  const voter = cluster.voter(failed);
  const doc = await (async () => {
    let answer = await call(voter.httpUrl, "GET", "/v1/catalog/after-19");
    await until(async () => {
      answer = await call(voter.httpUrl, "GET", "/v1/catalog/after-19");
      return answer.status === 200;
    }, "the restarted voter to serve what committed while it was down");
    return answer;
  })();
  expect(doc.body).toMatchObject({ value: 19 });
  await until(() => {
    const applied = cluster.voters.map((v) => v!.driver.status().applied);
    return applied.every((a) => a === applied[0]);
  }, "every voter to apply the same index");
  const dumps = cluster.voters.map((v) => stateDump(v!));
  expect(dumps[1]).toBe(dumps[0]);
  expect(dumps[2]).toBe(dumps[0]);
}

describe("fail-stop of a voter whose storage or apply fails", () => {
  it.each([
    ["ENOSPC", "leader"],
    ["EIO", "follower"],
  ] as const)(
    "%s at the log's fsync on the %s: it stops, acknowledges nothing more, and recovers after restart",
    async (code: IoErrorCode, role) => {
      const cluster = await startCluster();
      const faults = [0, 1, 2].map(() => new StorageFault("log-fsync"));
      for (let i = 0; i < 3; i++) await restartWithFaults(cluster, i, { storage: faults[i]!.hook });
      const leader = await cluster.waitForLeader();
      const target = role === "leader" ? leader : (leader + 1) % 3;
      const leaderUrl = cluster.voter(leader).httpUrl;
      for (let n = 0; n < 10; n++)
        expect((await put(leaderUrl, `before-${n}`, n, `before-${n}`)).status).toBe(200);

      const voter = cluster.voter(target);
      const sent = sendsAfterFailure(voter.driver);
      const injected = faults[target]!.arm(code);
      // The next append reaches the target's fsync: on the leader it is this write's own.
      const during = await put(leaderUrl, "during", 1, "during");
      const failure: VoterFailedError = await within(voter.failed, 5_000, "the voter to fail");
      const termAtFailure = voter.driver.raft.status().term;
      expect(faults[target]!.hits).toBe(1);
      expect(failure.source).toBe("storage");
      expect(failure.cause).toBeInstanceOf(StorageFailedError);
      expect((failure.cause as StorageFailedError).cause).toBe(injected);
      // A leader that failed acknowledged nothing of it; a follower's failure leaves a quorum.
      expect(during.status).toBe(role === "leader" ? 504 : 200);

      await expectStoppedWhileOthersServe(cluster, target, sent, termAtFailure);
      faults[target]!.disarm();
      await expectRecovers(cluster, target);
      // Retried under its ID, the write answered with an unknown outcome has exactly one outcome.
      const retried = await put(cluster.voter(target).httpUrl, "during", 1, "during");
      expect(retried.status).toBe(200);
      expect(retried.body).toMatchObject({ version: 1 });
    },
  );

  it("SQLITE_FULL in the leader's apply: it stops, acknowledges nothing more, and recovers after restart", async () => {
    const cluster = await startCluster();
    const leader = await cluster.waitForLeader();
    const url = cluster.voter(leader).httpUrl;
    for (let n = 0; n < 10; n++) expect((await put(url, `before-${n}`, n, `before-${n}`)).status).toBe(200);

    const voter = cluster.voter(leader);
    const sent = sendsAfterFailure(voter.driver);
    capStateDatabase(voter);
    // A document too large for the pages the database may still use: its apply fails.
    const big = await put(url, "big", "x".repeat(1024 * 1024), "big");
    const failure = await within(voter.failed, 5_000, "the voter to fail");
    const termAtFailure = voter.driver.raft.status().term;
    expect(big.status).toBe(504);
    expect(failure.source).toBe("apply");
    expect(failure.cause).toBeInstanceOf(InternalError);
    expect(((failure.cause as InternalError).cause as { code?: unknown }).code).toBe("SQLITE_FULL");

    const survivor = await expectStoppedWhileOthersServe(cluster, leader, sent, termAtFailure);
    // The entry had committed before the failed apply: the others applied it, once.
    const retried = await put(cluster.voter(survivor).httpUrl, "big", "x".repeat(1024 * 1024), "big");
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ version: 1 });
    await expectRecovers(cluster, leader);
  });

  it("EIO at the state's fsync for a snapshot point: it stops before compacting, and recovers after restart", async () => {
    const cluster = await startCluster({ env: { KeyLoad__Raft__SnapshotIntervalEntries: "20" } });
    const fault = new StorageFault("state-sync");
    const target = 0;
    await restartWithFaults(cluster, target, { storage: fault.hook });
    const leader = await cluster.waitForLeader();
    const voter = cluster.voter(target);
    const sent = sendsAfterFailure(voter.driver);
    const injected = fault.arm("EIO", "fsync");
    const { store } = driverParts(voter.driver);
    const compactedBefore = store.snapshotIndex();
    const url = cluster.voter(leader === target ? (target + 1) % 3 : leader).httpUrl;
    let n = 0;
    while (fault.hits === 0) {
      expect((await put(url, `k${n % 5}`, n, `c${n}`)).status).toBe(200);
      n++;
      if (n > 500) throw new Error("no snapshot point was taken");
    }
    const failure = await within(voter.failed, 5_000, "the voter to fail");
    const termAtFailure = voter.driver.raft.status().term;
    expect(fault.hits).toBe(1);
    expect(failure.source).toBe("apply");
    expect(failure.cause).toMatchObject({ reason: "StateSyncFailed", cause: injected });
    // Not on the strength of that fsync: the log keeps what the state may not hold durably.
    expect(store.snapshotIndex()).toBe(compactedBefore);
    await expectStoppedWhileOthersServe(cluster, target, sent, termAtFailure);
    fault.disarm();
    await expectRecovers(cluster, target);
  });

  it("a failed snapshot is retried after a growing pause, not after every Ready, and is not fatal", async () => {
    const cluster = await startCluster({
      env: { KeyLoad__Raft__SnapshotIntervalEntries: "20" },
    });
    // The leader copies its state only for a follower that needs a snapshot: make the voter whose
    // copies fail the leader, and leave another so far behind that only a snapshot brings it back.
    const fault = new StorageFault("snapshot-temp-written");
    fault.arm("ENOSPC", "write");
    const target = (await cluster.waitForLeader()) === 0 ? 1 : 0;
    await restartWithFaults(cluster, target, { storage: fault.hook });
    const leader = await cluster.waitForLeader();
    const voter = cluster.voter(target);
    if (leader !== target) {
      expect(await cluster.voter(leader).driver.transferLeadershipTo(`voter${target + 1}`, 5_000)).toBe(true);
    }
    await until(() => voter.driver.isLeader(), "the faulty voter to lead");
    const behind = 2;
    await cluster.stop(behind);
    const url = voter.httpUrl;
    let n = 0;
    // For `ms`, and at least `atLeast` writes: on a loaded machine a second may hold too few writes for
    // the leader to compact past the stopped follower, which then catches up from the log instead.
    const writeFor = async (ms: number, atLeast = 0): Promise<void> => {
      const until = Date.now() + ms;
      const least = n + atLeast;
      while (Date.now() < until || n < least) {
        expect((await put(url, `k${n % 10}`, n, `c${n}`)).status).toBe(200);
        n++;
      }
    };
    await writeFor(1_000, 60);
    expect(fault.hits).toBe(0);
    await cluster.restart(behind);
    await until(() => fault.hits >= 1, "a first copy for the follower behind", 20_000);
    const first = fault.hits;
    // Then one a second later at the earliest, the next two seconds after it: without a pause, an
    // attempt after every Ready, dozens in this time.
    await writeFor(2_500);
    expect(fault.hits - first).toBeLessThanOrEqual(2);
    expect(voter.driver.failureCause()).toBeNull();
    expect((await call(voter.httpUrl, "GET", "/health/live", { key: null })).status).toBe(200);

    fault.disarm();
    const follower = cluster.voter(behind).httpUrl;
    await until(
      async () => (await call(follower, "GET", `/v1/catalog/k${(n - 1) % 10}`)).status === 200,
      "the follower's catch-up once the copy succeeds",
      15_000,
    );
  });
});
