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
    const once = cluster.client(cluster.adminKey, { maxAttempts: 1, adaptiveThrottle: false });
    // The leader stops answering (SIGSTOP) while its connections stay open: the follower's forward
    // goes out and no answer comes back.
    cluster.pause(leader.name);
    try {
      await expect(
        once.put("lost/answer", { n: 1 }, { commandId: "fwd-1", endpoint: follower.httpUrl }),
      ).rejects.toMatchObject({ code: "UnknownWriteOutcome", commandId: "fwd-1" });
    } finally {
      cluster.resume(leader.name);
    }
    const client = cluster.client(cluster.adminKey, { adaptiveThrottle: false });
    const resolved = await client.resolveOutcome("fwd-1", (options) =>
      client.put("lost/answer", { n: 1 }, options),
    );
    expect(resolved).toMatchObject({ commandId: "fwd-1", key: "lost/answer", version: 1 });
    expect(await client.get("lost/answer")).toMatchObject({ value: { n: 1 }, version: 1 });
  });
});
