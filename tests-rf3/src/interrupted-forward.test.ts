import { UnknownWriteOutcomeError } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";

const startCluster = clusterPerTest();

describe("a forward the leader never answers", () => {
  it("answers UnknownWriteOutcome, and the same command ID later resolves to one application", async () => {
    const cluster = await startCluster({
      env: {
        ...FAST_RAFT,
        KeyLoad__Raft__ReplicationDeadlineMs: "1500",
      },
    });
    const leader = await cluster.waitForLeader();
    const follower = cluster.voters.find((v) => v.name !== leader.name)!;
    // The client waits well past the voters' deadlines, so the answer below is the follower's own,
    // not this client giving up (which would also be UnknownWriteOutcome, with no status).
    const once = cluster.client(cluster.adminKey, {
      maxAttempts: 1,
      adaptiveThrottle: false,
      requestTimeoutMs: 30_000,
    });
    // The leader stops answering (SIGSTOP) while its connections stay open: the follower's forward
    // goes out and no answer comes back.
    cluster.pause(leader.name);
    const startedAt = performance.now();
    let answer: unknown;
    try {
      answer = await once
        .put("lost/answer", { n: 1 }, { commandId: "fwd-1", endpoint: follower.httpUrl })
        .catch((error: unknown) => error);
    } finally {
      cluster.resume(leader.name);
    }
    const elapsedMs = performance.now() - startedAt;
    // The follower answers 504 itself once the replication deadline (1.5 s) passes: its scheduler's
    // deadline (ReplicationDeadline), or the forward's own timeout, which is that same deadline
    // (ForwardInterrupted), whichever timer fires first. The client's own give-up would carry no
    // HTTP status and come only after 30 s.
    expect(answer).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(answer).toMatchObject({
      code: "UnknownWriteOutcome",
      httpStatus: 504,
      endpoint: follower.httpUrl,
      commandId: "fwd-1",
    });
    expect(["ReplicationDeadline", "ForwardInterrupted"]).toContain(
      (answer as UnknownWriteOutcomeError).reason,
    );
    expect(elapsedMs).toBeGreaterThanOrEqual(1_400);
    expect(elapsedMs).toBeLessThan(10_000);
    const client = cluster.client(cluster.adminKey, { adaptiveThrottle: false });
    const resolved = await client.resolveOutcome("fwd-1", (options) =>
      client.put("lost/answer", { n: 1 }, options),
    );
    expect(resolved).toMatchObject({ commandId: "fwd-1", key: "lost/answer", version: 1 });
    expect(await client.get("lost/answer")).toMatchObject({ value: { n: 1 }, version: 1 });
  });
});
