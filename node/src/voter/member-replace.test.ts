import { FailedPreconditionError, InvalidArgumentError } from "@keyload/contract";
import { afterEach, describe, expect, it } from "vitest";
import { ClusterMembership } from "./cluster-membership.js";
import { call, VoterCluster } from "./test-fixtures/voter-cluster.js";
import { failure, waitFor } from "./test-fixtures/wait-for.js";

let cluster: VoterCluster | undefined;
afterEach(async () => {
  await cluster?.dispose();
  cluster = undefined;
});

describe("replacing a voter that lost its data", () => {
  it("removes the old member, adds the new incarnation as a learner, and promotes it once caught up", async () => {
    const c = await VoterCluster.start();
    cluster = c;
    const leader = await c.waitForLeader();
    const lead = c.voter(leader).driver;
    const target = (leader + 1) % 3;
    const other = 3 - leader - target;
    const name = `voter${target + 1}`;
    for (let n = 0; n < 5; n++) {
      const put = await call(c.voter(leader).httpUrl, "PUT", `/v1/catalog/k${n}`, {
        body: { value: n },
        commandId: `before-${n}`,
      });
      expect(put.status).toBe(200);
    }

    // Its disk is lost: started again without being told to bootstrap, it is a new member. Told not to
    // ask the leader to join, it waits for an admin, as with etcd.
    await c.restartEmpty(target, { KeyLoad__Cluster__NewMemberJoin: "manual" });
    const joiner = c.voter(target).driver.status().id;
    expect(joiner).toMatch(new RegExp(`^${name}~[0-9a-f]{8}$`));
    // Several election timeouts (300 ms): asking, it would have joined by then.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(c.voter(target).driver.members()).toEqual([]);
    expect(lead.members().map((m) => m.id)).toContain(name);

    expect(await failure(lead.proposeConfChange({ type: "promote", node: joiner }))).toBeInstanceOf(
      InvalidArgumentError,
    );
    const removed = lead.proposeConfChange({ type: "remove", node: name });
    // One change at a time: the next waits until the last is applied.
    expect(await failure(lead.proposeConfChange({ type: "add-learner", node: joiner }))).toBeInstanceOf(
      FailedPreconditionError,
    );
    await removed;
    await lead.proposeConfChange({ type: "add-learner", node: joiner });
    await waitFor(() => {
      const learner = lead.members().find((m) => m.id === joiner);
      return learner !== undefined && (learner.match ?? 0) >= lead.status().commit;
    }, "the learner to catch up");
    await lead.proposeConfChange({ type: "promote", node: joiner });
    expect(
      lead
        .members()
        .map(({ id, name: voterName, role }) => ({ id, name: voterName, role }))
        .sort((a, b) => a.name.localeCompare(b.name)),
    ).toEqual(
      [0, 1, 2].map((i) => ({
        id: i === target ? joiner : `voter${i + 1}`,
        name: `voter${i + 1}`,
        role: "voter",
      })),
    );

    // The new member counts: with the third voter gone, the leader and it still commit.
    await c.stop(other);
    const put = await call(c.voter(leader).httpUrl, "PUT", "/v1/catalog/after", {
      body: { value: "after" },
      commandId: "after-1",
    });
    expect(put.status).toBe(200);
    await waitFor(
      () => c.voter(target).driver.status().applied >= lead.status().commit,
      "the new member to apply",
    );
    const read = await call(c.voter(target).httpUrl, "GET", "/v1/catalog/k3");
    expect(read.status).toBe(200);
  }, 60_000);
});

describe("a voter that lost its data, left to itself", () => {
  it("asks the leader to put it in its old member's place, as a learner, then a voter once caught up", async () => {
    const changes: string[][] = [];
    const c = await VoterCluster.start({
      logLines: (_, text) => {
        const line = JSON.parse(text) as { msg: string; changes?: string[] };
        if (line.msg === "new member joining: configuration changed") changes.push(line.changes ?? []);
      },
    });
    cluster = c;
    const leader = await c.waitForLeader();
    const lead = c.voter(leader).driver;
    const target = (leader + 1) % 3;
    const name = `voter${target + 1}`;
    // More than a learner is let lag behind and still be promoted would take longer to catch up; a
    // few entries show the order of the steps.
    for (let n = 0; n < 20; n++) {
      const put = await call(c.voter(leader).httpUrl, "PUT", `/v1/catalog/k${n}`, {
        body: { value: n },
        commandId: `before-${n}`,
      });
      expect(put.status).toBe(200);
    }

    // A process claiming the name is let in only once the leader's own connection to the name's address
    // reaches it; and then not while the member of that name is still heard from.
    const claimant = `${name}~0a1b2c3d`;
    let reached = name;
    const membership = new ClusterMembership(lead, {
      isKnownName: () => true,
      memberAt: () => reached,
      maxPromoteLagEntries: 1000,
      deadlineMs: 5_000,
    });
    const elsewhere = await failure(membership.join(claimant, "none"));
    expect(elsewhere).toBeInstanceOf(FailedPreconditionError);
    expect((elsewhere as FailedPreconditionError).reason).toBe("JoinerNotAtAddress");
    reached = claimant;
    const inUse = await failure(membership.join(claimant, "none"));
    expect(inUse).toBeInstanceOf(FailedPreconditionError);
    expect((inUse as FailedPreconditionError).reason).toBe("MemberNameInUse");
    // One that held a configuration naming it a learner, absent from the leader's, was removed.
    expect(await membership.join(claimant, "learner")).toEqual({ role: "removed", changes: [] });
    expect(
      lead
        .members()
        .map((m) => m.id)
        .sort(),
    ).toEqual(["voter1", "voter2", "voter3"]);

    await c.restartEmpty(target);
    const joiner = c.voter(target).driver.status().id;
    expect(joiner).toMatch(new RegExp(`^${name}~[0-9a-f]{8}$`));

    await waitFor(
      () => lead.members().some((m) => m.id === joiner && m.role === "voter"),
      "the new member to be a voter",
      20_000,
    );
    expect(
      lead
        .members()
        .map(({ id, role }) => ({ id, role }))
        .sort((a, b) => a.id.localeCompare(b.id)),
    ).toEqual([0, 1, 2].map((i) => ({ id: i === target ? joiner : `voter${i + 1}`, role: "voter" })));
    // The old member went first, then the new one came in as a learner, and was promoted after (a step
    // whose outcome a leader change left unknown is not logged, and is found made when asked again).
    const order = [`removed ${name}`, `added ${joiner} as a learner`, `promoted ${joiner}`];
    const ranks = changes.flat().map((change) => order.indexOf(change));
    expect(ranks.length).toBeGreaterThan(0);
    expect(ranks.every((rank) => rank >= 0)).toBe(true);
    expect(ranks).toEqual([...new Set(ranks)].sort((a, b) => a - b));
    await waitFor(
      () =>
        c
          .voter(target)
          .driver.members()
          .find((m) => m.id === joiner)?.role === "voter",
      "the new member to apply its promotion",
    );

    // It holds what was acknowledged before it lost its data, and counts toward commits.
    await c.stop(3 - leader - target);
    const put = await call(c.voter(leader).httpUrl, "PUT", "/v1/catalog/after", {
      body: { value: "after" },
      commandId: "after-1",
    });
    expect(put.status).toBe(200);
    for (const key of ["k0", "k19", "after"]) {
      const read = await call(c.voter(target).httpUrl, "GET", `/v1/catalog/${key}`);
      expect(read.status).toBe(200);
    }
  }, 60_000);
});

describe("a member removed while it was a learner", () => {
  it("is told so when it asks to join again, and asks nothing more", async () => {
    const said: string[] = [];
    const c = await VoterCluster.start({
      logLines: (i, text) => {
        const line = JSON.parse(text) as { msg: string };
        said.push(`${i} ${line.msg}`);
      },
    });
    cluster = c;
    const leader = await c.waitForLeader();
    const lead = c.voter(leader).driver;
    const target = (leader + 1) % 3;
    await c.restartEmpty(target, { KeyLoad__Cluster__NewMemberJoin: "manual" });
    const joiner = c.voter(target).driver.status().id;
    await lead.proposeConfChange({ type: "remove", node: `voter${target + 1}` });
    await lead.proposeConfChange({ type: "add-learner", node: joiner });
    await waitFor(
      () =>
        c
          .voter(target)
          .driver.members()
          .find((m) => m.id === joiner)?.role === "learner",
      "the learner to apply its own addition",
    );
    // Removed while it is down: it never hears of it, and still holds a configuration naming it a learner.
    await c.stop(target);
    await lead.proposeConfChange({ type: "remove", node: joiner });
    c.envs[target] = { ...c.envs[target]!, KeyLoad__Cluster__NewMemberJoin: "automatic" };
    await c.restart(target);
    await waitFor(
      () => said.includes(`${target} this member was removed from the cluster: not asking to join again`),
      "the member to be told it was removed",
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(lead.members().map((m) => m.id)).not.toContain(joiner);
    expect(said.filter((line) => line.endsWith("told it was removed"))).toHaveLength(1);
  }, 60_000);
});

describe("a voter that lost its data and is told to bootstrap again", () => {
  it("is refused by the peers that saw it before, and takes no part in the cluster", async () => {
    const c = await VoterCluster.start();
    cluster = c;
    const leader = await c.waitForLeader();
    const lead = c.voter(leader).driver;
    const target = (leader + 1) % 3;
    for (let n = 0; n < 3; n++) {
      const put = await call(c.voter(leader).httpUrl, "PUT", `/v1/catalog/k${n}`, {
        body: { value: n },
        commandId: `before-${n}`,
      });
      expect(put.status).toBe(200);
    }
    await waitFor(
      () => c.voter(target).driver.status().commit >= lead.status().commit,
      "the target to catch up",
    );

    // Its disk is lost, and its configuration still asks for a bootstrap: it makes the cluster again,
    // under its earlier member ID, with no vote and none of the entries it acknowledged.
    await c.restartEmpty(target, {
      KeyLoad__Cluster__BootstrapId: c.envs[target]!.KeyLoad__Cluster__BootstrapId!,
    });
    const again = c.voter(target).driver;
    expect(again.status()).toMatchObject({ id: `voter${target + 1}`, commit: 1 });

    const put = await call(c.voter(leader).httpUrl, "PUT", "/v1/catalog/after", {
      body: { value: "after" },
      commandId: "after-1",
    });
    expect(put.status).toBe(200);
    // Two election timeouts and more: joined, it would have heard from the leader within a heartbeat.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(again.status()).toMatchObject({ leader: null, commit: 1 });
    expect(lead.status().commit).toBeGreaterThan(1);
  }, 60_000);
});
