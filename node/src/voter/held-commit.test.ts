import { describe, expect, it, vi } from "vitest";
import { waitFor } from "../http/test-fixtures/raw-http.js";
import type { Message, NodeId } from "../raft/types.js";
import type { RaftDriver } from "./raft-driver.js";
import { clusterPerTest, driverParts, entry } from "./test-fixtures/cluster-per-test.js";

vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });

const startCluster = clusterPerTest();

/** Every message the driver hands its transport, in order. */
function sent(driver: RaftDriver): Message[] {
  const { transport } = driverParts(driver);
  const messages: Message[] = [];
  const send = transport.send.bind(transport);
  vi.spyOn(transport, "send").mockImplementation((m: Message) => {
    messages.push(m);
    send(m);
  });
  return messages;
}

/** Heartbeats once a second, so a commit index that waited for one would show. */
const SLOW_HEARTBEATS = {
  KeyLoad__Raft__HeartbeatIntervalMs: "1000",
  KeyLoad__Raft__ElectionTimeoutMs: "2000",
};

describe("a leader's commit index", () => {
  it("reaches the followers with the next append, not in an entry-less append of its own", async () => {
    const cluster = await startCluster({ env: SLOW_HEARTBEATS });
    const leader = cluster.voter(await cluster.waitForLeader()).driver;
    await leader.propose([entry()]); // both followers past probing
    const messages = sent(leader);
    let last = 0;
    for (let i = 0; i < 5; i++) {
      const [result] = await leader.propose([entry()]);
      last = result!.entryIndex;
    }

    const entryLess = messages.filter((m) => m.type === "append" && m.entries.length === 0);
    // Only what a heartbeat flushed (it goes right after), or nothing: 5 writes would have made 10.
    const heartbeats = messages.filter((m) => m.type === "heartbeat").length;
    expect(entryLess.length).toBeLessThanOrEqual(heartbeats);
    const perFollower = new Map<NodeId, number>();
    for (const m of messages) {
      if (m.type === "append" && m.entries.length > 0)
        perFollower.set(m.to, (perFollower.get(m.to) ?? 0) + 1);
    }
    expect([...perFollower.values()]).toEqual([5, 5]);
    // Each follower learned of every earlier commit with the append after it.
    for (const m of messages) {
      if (m.type === "append" && m.entries.length > 0 && m.entries[0]!.index === last) {
        expect(m.commit).toBe(last - 1);
      }
    }
  });

  it("held after the last write reaches the followers with the next heartbeat", async () => {
    const cluster = await startCluster({ env: { KeyLoad__Raft__HeartbeatIntervalMs: "100" } });
    const leaderIndex = await cluster.waitForLeader();
    const [result] = await cluster.voter(leaderIndex).driver.propose([entry()]);
    const entryIndex = result!.entryIndex;
    for (const [i, v] of cluster.voters.entries()) {
      if (i === leaderIndex) continue;
      await waitFor(
        () => v!.driver.status().applied >= entryIndex,
        `voter${i + 1} to apply entry ${entryIndex}`,
        1_000,
      );
    }
  });

  it("held for a follower goes out ahead of the answer to that follower's read", async () => {
    const cluster = await startCluster({ env: SLOW_HEARTBEATS });
    const leaderIndex = await cluster.waitForLeader();
    const leader = cluster.voter(leaderIndex).driver;
    const follower = cluster.voter((leaderIndex + 1) % 3).driver;
    await leader.propose([entry()]);
    const [result] = await leader.propose([entry()]);
    const entryIndex = result!.entryIndex;
    const started = Date.now();
    await follower.readBarrier();
    expect(follower.status().applied).toBeGreaterThanOrEqual(entryIndex);
    expect(Date.now() - started).toBeLessThan(500);
  });
});

describe("a follower's commit index", () => {
  it("is written at once when it hands out a membership change, not held for the next write", async () => {
    const cluster = await startCluster({ env: SLOW_HEARTBEATS });
    const leaderIndex = await cluster.waitForLeader();
    const leader = cluster.voter(leaderIndex).driver;
    await leader.propose([entry()]);
    const follower = cluster.voter((leaderIndex + 1) % 3).driver;
    const { writer } = driverParts(follower);
    const written: number[] = [];
    const write = writer.write.bind(writer);
    vi.spyOn(writer, "write").mockImplementation((w) => {
      if (w.hardState) written.push(w.hardState.commit);
      return write(w);
    });
    await leader.proposeConfChange({ type: "add-learner", node: "voter9" });
    const changeIndex = leader.status().lastIndex;
    await waitFor(() => follower.status().applied >= changeIndex, "the follower to apply the change", 5_000);
    // No entry came after the change: only the write of its commit can have carried that commit.
    expect(Math.max(0, ...written)).toBeGreaterThanOrEqual(changeIndex);
  });
});
