import { afterEach, describe, expect, it } from "vitest";
import { ADMIN_KEY } from "./test-fixtures/cluster-envs.js";
import { stateDump } from "./test-fixtures/storage-faults.js";
import { call, VoterCluster } from "./test-fixtures/voter-cluster.js";
import { waitFor } from "./test-fixtures/wait-for.js";

const KEYS = ["voter1-admin-key-0123456789", "voter2-admin-key-0123456789", "voter3-admin-key-0123456789"];
const JOINER_KEY = "joiner-admin-key-0123456789";

let cluster: VoterCluster | undefined;
afterEach(async () => {
  await cluster?.dispose();
  cluster = undefined;
});

/** The HTTP status of an authenticated read through `url` with `key`: 404 if the key is known there, 401 if not. */
async function readStatus(url: string, key: string): Promise<number> {
  return (await call(url, "GET", "/v1/catalog/absent", { key })).status;
}

/** Waits until every running voter has applied the leader's commit, so that their states compare. */
async function waitForSameApplied(c: VoterCluster, leader: number): Promise<void> {
  await waitFor(() => {
    const commit = c.voter(leader).driver.status().commit;
    return c.voters.every((v) => v === null || v.driver.status().applied === commit);
  }, "every voter to apply the leader's commit");
}

describe("the bootstrap admin of a new cluster", () => {
  it("is one key, the same on every voter, when the voters are configured with different ones", async () => {
    const c = await VoterCluster.start({
      voterEnv: Object.fromEntries(KEYS.map((key, i) => [i, { KeyLoad__Bootstrap__AdminKey: key }])),
    });
    cluster = c;
    const leader = await c.waitForLeader();
    const statuses = await Promise.all(
      KEYS.map((key) => Promise.all(c.voters.map((v) => readStatus(v!.httpUrl, key)))),
    );
    const working = KEYS.filter((_, k) => statuses[k]!.every((status) => status === 404));
    expect(working, JSON.stringify(statuses)).toHaveLength(1);
    for (const [k, perVoter] of statuses.entries()) {
      if (KEYS[k] !== working[0]) expect(perVoter).toEqual([401, 401, 401]);
    }
    // It administers through every voter, followers forwarding to the leader.
    for (const [i, v] of c.voters.entries()) {
      const put = await call(v!.httpUrl, "PUT", `/v1/catalog/k${i}`, {
        body: { value: i },
        commandId: `w${i}`,
        key: working[0]!,
      });
      expect(put.status).toBe(200);
    }
    await waitForSameApplied(c, leader);
    const dumps = c.voters.map((v) => stateDump(v!));
    expect(dumps[1]).toBe(dumps[0]);
    expect(dumps[2]).toBe(dumps[0]);
  }, 60_000);

  it("reaches a voter that joins later, whatever admin key that voter is configured with", async () => {
    const c = await VoterCluster.start();
    cluster = c;
    const leader = await c.waitForLeader();
    const lead = c.voter(leader).driver;
    const target = (leader + 1) % 3;
    const put = await call(c.voter(leader).httpUrl, "PUT", "/v1/catalog/before", {
      body: { value: 1 },
      commandId: "before",
    });
    expect(put.status).toBe(200);

    // Its data lost, it starts again as a new member, configured with another admin key.
    // Added by the steps below, not by asking.
    await c.restartEmpty(target, {
      KeyLoad__Bootstrap__AdminKey: JOINER_KEY,
      KeyLoad__Cluster__NewMemberJoin: "manual",
    });
    const joining = c.voter(target);
    // It seeded nothing of its own: its state holds no principal until the cluster's reaches it.
    expect(joining.hasBootstrapAdmin()).toBe(false);

    const joiner = joining.driver.status().id;
    await lead.proposeConfChange({ type: "remove", node: `voter${target + 1}` });
    await lead.proposeConfChange({ type: "add-learner", node: joiner });
    await waitFor(() => {
      const learner = lead.members().find((m) => m.id === joiner);
      return learner !== undefined && (learner.match ?? 0) >= lead.status().commit;
    }, "the learner to catch up");
    await lead.proposeConfChange({ type: "promote", node: joiner });
    await waitForSameApplied(c, leader);

    expect(joining.hasBootstrapAdmin()).toBe(true);
    for (const v of c.voters) {
      expect(await readStatus(v!.httpUrl, ADMIN_KEY)).toBe(404);
      expect(await readStatus(v!.httpUrl, JOINER_KEY)).toBe(401);
    }
    expect(stateDump(joining)).toBe(stateDump(c.voter(leader)));
  }, 60_000);

  it("keeps every voter unready until the admin has applied there", async () => {
    const c = await VoterCluster.prepare();
    cluster = c;
    // Alone, the first voter can elect no leader, so nothing proposes the admin.
    await c.restart(0);
    const alone = await call(c.voter(0).httpUrl, "GET", "/health/ready", { key: null });
    expect(alone.status).toBe(503);
    expect(alone.body).toMatchObject({
      error: { details: { reasons: expect.arrayContaining(["the bootstrap admin is not applied yet"]) } },
    });
    expect(c.voter(0).hasBootstrapAdmin()).toBe(false);

    await c.restart(1);
    await c.restart(2);
    await c.waitForLeader();
    for (const v of c.voters) {
      expect(await call(v!.httpUrl, "GET", "/health/ready", { key: null })).toMatchObject({
        status: 200,
        body: { ready: true },
      });
      expect(await readStatus(v!.httpUrl, ADMIN_KEY)).toBe(404);
    }
  }, 60_000);
});
