import { afterEach, describe, expect, it } from "vitest";
import { LEADER_HEADER } from "../http/leader-header.js";
import { call, VoterCluster } from "./test-fixtures/voter-cluster.js";
import { waitFor } from "./test-fixtures/wait-for.js";

const MEMBERS = "/v1/admin/cluster/members";

let cluster: VoterCluster | undefined;
afterEach(async () => {
  await cluster?.dispose();
  cluster = undefined;
});

function errorOf(body: Record<string, unknown>): { code: string; reason: string } {
  return body.error as { code: string; reason: string };
}

describe("the cluster membership admin routes", () => {
  it("list the members, refuse changes off the leader with a hint, and check what they are asked", async () => {
    const c = await VoterCluster.start();
    cluster = c;
    const leader = await c.waitForLeader();
    const follower = (leader + 1) % 3;
    const leaderUrl = c.voter(leader).httpUrl;

    const fromLeader = await call(leaderUrl, "GET", MEMBERS);
    expect(fromLeader.status).toBe(200);
    expect(fromLeader.body.leader).toBe(`voter${leader + 1}`);
    const lastIndex = fromLeader.body.lastIndex as number;
    expect(lastIndex).toBeGreaterThan(0);
    const members = fromLeader.body.members as { memberId: string; role: string; match?: number }[];
    expect(members.map((m) => [m.memberId, m.role]).sort()).toEqual([
      ["voter1", "voter"],
      ["voter2", "voter"],
      ["voter3", "voter"],
    ]);
    for (const m of members) expect(m.match).toBeGreaterThan(0);

    // A follower knows the configuration but not how far each member is.
    const fromFollower = await call(c.voter(follower).httpUrl, "GET", MEMBERS);
    expect(fromFollower.body).toMatchObject({ leader: `voter${leader + 1}`, lastIndex: null });
    for (const m of fromFollower.body.members as { match?: number }[]) expect(m.match).toBeUndefined();

    // Only the leader changes the configuration, or says a change is not needed: a follower's
    // configuration may trail the cluster's. A follower says where the leader is and proposes nothing.
    const followerUrl = c.voter(follower).httpUrl;
    const offLeader: [string, string, unknown][] = [
      ["DELETE", `${MEMBERS}/voter1`, undefined],
      ["DELETE", `${MEMBERS}/voter2~0a1b2c3d`, undefined],
      ["POST", MEMBERS, { memberId: "voter2" }],
      ["POST", MEMBERS, { memberId: "voter2~0a1b2c3d" }],
      ["POST", `${MEMBERS}/voter2/promote`, undefined],
      ["POST", "/v1/admin/cluster/leader", { memberId: `voter${leader + 1}` }],
    ];
    for (const [method, path, body] of offLeader) {
      const answer = await call(followerUrl, method, path, body === undefined ? {} : { body });
      expect({ request: `${method} ${path}`, status: answer.status }).toEqual({
        request: `${method} ${path}`,
        status: 503,
      });
      expect(errorOf(answer.body)).toMatchObject({ code: "Unavailable", reason: "NotLeader" });
      expect(answer.headers.get(LEADER_HEADER)).toContain(`voter${leader + 1}`);
    }

    const cases: [string, string, unknown, number, string][] = [
      ["POST", MEMBERS, { memberId: "voter3~XYZ" }, 400, "InvalidMemberId"],
      ["POST", MEMBERS, { memberId: "voter9" }, 400, "UnknownVoterName"],
      ["POST", MEMBERS, { memberId: "voter2~0a1b2c3d" }, 412, "MemberNameInUse"],
      ["POST", `${MEMBERS}/voter2~0a1b2c3d/promote`, undefined, 404, "MemberNotFound"],
      ["POST", MEMBERS, {}, 400, "InvalidArgument"],
    ];
    for (const [method, path, body, status, reason] of cases) {
      const answer = await call(leaderUrl, method, path, body === undefined ? {} : { body });
      expect(answer.status, `${method} ${path}`).toBe(status);
      if (reason !== "InvalidArgument") expect(errorOf(answer.body).reason, `${method} ${path}`).toBe(reason);
    }
    // Asking for what already holds changes nothing, so a retry is safe.
    expect((await call(leaderUrl, "POST", MEMBERS, { body: { memberId: "voter2" } })).body).toEqual({
      memberId: "voter2",
      role: "voter",
      changed: false,
    });
    expect((await call(leaderUrl, "POST", `${MEMBERS}/voter2/promote`)).body).toMatchObject({
      changed: false,
    });
    expect((await call(leaderUrl, "DELETE", `${MEMBERS}/voter2~0a1b2c3d`)).body).toEqual({
      memberId: "voter2~0a1b2c3d",
      role: null,
      changed: false,
    });
    // An unknown key reads nothing of it.
    expect((await call(leaderUrl, "GET", MEMBERS, { key: "not-a-key" })).status).toBe(401);
    expect((await call(leaderUrl, "GET", MEMBERS)).body.members).toHaveLength(3);
  }, 60_000);

  it("refuse a removal that would leave a quorum of the voters not heard from", async () => {
    const c = await VoterCluster.start();
    cluster = c;
    const leader = await c.waitForLeader();
    const leaderUrl = c.voter(leader).httpUrl;
    const [down, up] = [(leader + 1) % 3, (leader + 2) % 3];
    await c.stop(down);
    // Check-quorum's rounds are election timeouts (300 ms here): after two, the leader has not heard
    // from the stopped voter in either.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // Left with the leader and the stopped voter, the cluster could commit nothing, not even the undoing.
    const refused = await call(leaderUrl, "DELETE", `${MEMBERS}/voter${up + 1}`);
    expect(refused.status).toBe(412);
    expect(refused.body.error).toMatchObject({
      code: "FailedPrecondition",
      reason: "NotEnoughActiveVoters",
    });
    expect((refused.body.error as { details: unknown }).details).toEqual({ voters: 2, active: 1, quorum: 2 });
    const listed = (await call(leaderUrl, "GET", MEMBERS)).body.members as { memberId: string }[];
    expect(listed).toHaveLength(3);
    // The stopped voter itself may go: the two left are both heard from.
    const removed = await call(leaderUrl, "DELETE", `${MEMBERS}/voter${down + 1}`);
    expect(removed.body).toEqual({ memberId: `voter${down + 1}`, role: null, changed: true });
    expect(
      (await call(leaderUrl, "PUT", "/v1/catalog/after", { body: { value: 1 }, commandId: "a1" })).status,
    ).toBe(200);
  }, 30_000);

  it("replace a voter that lost its data: remove, add as a learner, promote only once caught up", async () => {
    // Shipped settings: a learner holding nothing is behind, however short the log.
    const c = await VoterCluster.start();
    cluster = c;
    const leader = await c.waitForLeader();
    const leaderUrl = c.voter(leader).httpUrl;
    const target = (leader + 1) % 3;
    const name = `voter${target + 1}`;
    for (let n = 0; n < 10; n++) {
      const put = await call(leaderUrl, "PUT", `/v1/catalog/k${n}`, {
        body: { value: n },
        commandId: `c${n}`,
      });
      expect(put.status).toBe(200);
    }

    // An admin's steps, as with etcd: the new member does not ask to join by itself.
    await c.restartEmpty(target, { KeyLoad__Cluster__NewMemberJoin: "manual" });
    // The new incarnation says who it is, and that it is no member yet.
    const health = await call(c.voter(target).httpUrl, "GET", "/health/live");
    const detail = health.body.detail as { memberId: string; member: string | null };
    expect(detail.member).toBeNull();
    const joiner = detail.memberId;
    expect(joiner).toMatch(new RegExp(`^${name}~[0-9a-f]{8}$`));
    // Stopped before it is added, it cannot catch up yet.
    await c.stop(target);

    expect((await call(leaderUrl, "DELETE", `${MEMBERS}/${name}`)).body).toEqual({
      memberId: name,
      role: null,
      changed: true,
    });
    expect((await call(leaderUrl, "POST", MEMBERS, { body: { memberId: joiner } })).body).toEqual({
      memberId: joiner,
      role: "learner",
      changed: true,
    });
    const behind = await call(leaderUrl, "POST", `${MEMBERS}/${joiner}/promote`);
    expect(behind.status).toBe(412);
    expect(errorOf(behind.body).reason).toBe("LearnerBehind");

    await c.restart(target);
    await waitFor(
      async () => {
        const answer = await call(leaderUrl, "POST", `${MEMBERS}/${joiner}/promote`);
        if (answer.status === 412) return false;
        expect(answer.body).toEqual({ memberId: joiner, role: "voter", changed: true });
        return true;
      },
      "the learner to catch up and be promoted",
      15_000,
    );
    const listed = (await call(leaderUrl, "GET", MEMBERS)).body.members as {
      memberId: string;
      role: string;
    }[];
    expect(listed.map((m) => [m.memberId, m.role]).sort()).toEqual(
      [0, 1, 2].map((i) => [i === target ? joiner : `voter${i + 1}`, "voter"]).sort(),
    );
    const replaced = await call(c.voter(target).httpUrl, "GET", "/health/live");
    expect((replaced.body.detail as { member: string }).member).toBe("voter");
    expect((await call(c.voter(target).httpUrl, "GET", "/v1/catalog/k9")).status).toBe(200);
  }, 60_000);
});
