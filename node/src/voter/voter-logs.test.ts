import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";

const startCluster = clusterPerTest();

interface Line {
  readonly voter: number;
  readonly text: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/** Options that keep every voter's log lines in `lines`. */
function kept(lines: Line[]): { logLines: (voter: number, text: string) => void } {
  return {
    logLines: (voter, text) =>
      lines.push({ voter, text, fields: JSON.parse(text) as Record<string, unknown> }),
  };
}

describe("a voter's logs", () => {
  it("name the new leader and term on a follower that stays one, as on the voters whose role changed", async () => {
    const lines: Line[] = [];
    // Elections wait at least 2 s: the leader that follows the stop comes from its transfer, and the
    // third voter never campaigns, so its role never changes.
    const cluster = await startCluster({
      env: { KeyLoad__Raft__ElectionTimeoutMs: "2000", KeyLoad__Raft__HeartbeatIntervalMs: "50" },
      ...kept(lines),
    });
    const old = await cluster.waitForLeader();
    const oldTerm = cluster.voter(old).driver.status().term;
    await cluster.stop(old);
    const next = await cluster.waitForLeader();
    const follower = [0, 1, 2].find((i) => i !== old && i !== next)!;
    const nextTerm = cluster.voter(next).driver.status().term;
    expect(nextTerm).toBeGreaterThan(oldTerm);

    const said = lines.filter((l) => l.voter === follower && l.fields.leader === `voter${next + 1}`);
    expect(said.map((l) => l.fields)).toContainEqual(
      expect.objectContaining({
        msg: "raft leader changed",
        nodeId: `voter${follower + 1}`,
        role: "follower",
        term: nextTerm,
      }),
    );
  });

  it("name the command and term of a leader's own proposals, and the node once", async () => {
    const lines: Line[] = [];
    const cluster = await startCluster(kept(lines));
    const leader = await cluster.waitForLeader();
    const own = lines.filter((l) => l.voter === leader && /bootstrap admin/.test(String(l.fields.msg)));
    expect(own.map((l) => l.fields)).toContainEqual(
      expect.objectContaining({
        msg: "proposing the bootstrap admin",
        nodeId: `voter${leader + 1}`,
        commandId: "system.bootstrap-admin",
        term: cluster.voter(leader).driver.status().term,
      }),
    );
    // A key twice in one line is JSON that strict log stores refuse.
    for (const l of lines) expect(l.text.match(/"nodeId":/g), l.text).toHaveLength(1);
  });
});
