import { afterEach, describe, expect, it, vi } from "vitest";
import { LEADER_HEADER } from "../http/leader-header.js";
import { call, VoterCluster } from "./test-fixtures/voter-cluster.js";

const LEADER = "/v1/admin/cluster/leader";

let cluster: VoterCluster | undefined;
afterEach(async () => {
  await cluster?.dispose();
  cluster = undefined;
});

describe("the leadership transfer admin route", () => {
  it("hands leadership to the voter asked for, sends a follower's caller to the leader, and checks the name", async () => {
    const c = await VoterCluster.start();
    cluster = c;
    const leader = await c.waitForLeader();
    const target = (leader + 1) % 3;
    const other = (leader + 2) % 3;
    const leaderUrl = c.voter(leader).httpUrl;
    const body = { memberId: `voter${target + 1}` };

    // Only the leader hands leadership over; a follower says where it is.
    const offLeader = await call(c.voter(other).httpUrl, "POST", LEADER, { body });
    expect(offLeader.status).toBe(503);
    expect(offLeader.headers.get(LEADER_HEADER)).toContain(`voter${leader + 1}`);

    const cases: [unknown, number, string][] = [
      [{ memberId: "voter9" }, 400, "UnknownVoterName"],
      [{ memberId: "voter2~0a1b2c3d" }, 404, "MemberNotFound"],
      [{}, 400, "InvalidArgument"],
    ];
    for (const [refused, status, reason] of cases) {
      const answer = await call(leaderUrl, "POST", LEADER, { body: refused });
      expect(answer.status, JSON.stringify(refused)).toBe(status);
      const error = answer.body.error as { code: string; reason: string };
      // A body the schema refuses names the schema's complaint as its reason.
      expect(reason === "InvalidArgument" ? error.code : error.reason, JSON.stringify(refused)).toBe(reason);
    }
    expect(await c.waitForLeader()).toBe(leader);

    const moved = await call(leaderUrl, "POST", LEADER, { body });
    expect(moved.status).toBe(200);
    expect(moved.body).toEqual({ leader: `voter${target + 1}`, changed: true });
    expect(c.voter(target).driver.isLeader()).toBe(true);
    // Asking again changes nothing, so a retry is safe.
    const again = await call(c.voter(target).httpUrl, "POST", LEADER, { body });
    expect(again.body).toEqual({ leader: `voter${target + 1}`, changed: false });
  }, 60_000);
});

describe("the hand-off before a shutdown", () => {
  it("goes to the most caught-up voter, never to a learner further ahead", async () => {
    const c = await VoterCluster.start();
    cluster = c;
    const leader = c.voter(await c.waitForLeader()).driver;
    await leader.proposeConfChange({ type: "add-learner", node: "voter9" });
    // As if the learner had caught up while both voters lagged: the highest match is its.
    const status = leader.raft.status.bind(leader.raft);
    vi.spyOn(leader.raft, "status").mockImplementation(() => {
      const s = status();
      return {
        ...s,
        progress: {
          ...s.progress,
          voter9: { match: s.lastIndex + 1, next: s.lastIndex + 2, state: "replicate", active: true },
        },
      };
    });
    expect(await leader.transferLeadership(5_000)).toBe(true);
    vi.mocked(leader.raft.status).mockRestore();
    const next = await c.waitForLeader();
    expect(c.voter(next).driver).not.toBe(leader);
  });
});
