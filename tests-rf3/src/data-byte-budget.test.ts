import type { TestCluster, TestVoter, VoterName } from "@keyload/apphost/testing";
import { partitionsUnavailable } from "@keyload/apphost/testing";
import {
  CommandIdConflictError,
  type KeyLoadClient,
  NotFoundError,
  ResourceExhaustedError,
  UnknownWriteOutcomeError,
} from "@keyload/client";
import { describe, expect, it, vi } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { waitForDataCommands } from "./test-fixtures/metric-wait.js";
import { retainedBytesOf } from "./test-fixtures/sized-bodies.js";
import { metricOf } from "./test-fixtures/voter-metrics.js";

/**
 * The seed's data-byte-budget regression on three voter processes: with replication held, catalog
 * writes fill the leader's data lane until it refuses with 429 `ResourceExhausted` `CommandBytes`, as
 * many as the accounting formula predicts for that leader's own forwarded budget. A refused write is
 * never published anywhere (read, query, bulk-get, search, subscription). While the data lane is still
 * full, control work (an ack, dispatches) under each refused command ID is admitted by the control
 * reserve, and commits under that ID once replication resumes, after which a data write under that ID
 * conflicts: the refusal came before the command took its ID or reached the log. Through a follower,
 * the leader's refusal comes back unchanged.
 */
const MiB = 1024 * 1024;
/** What every write of these tests retains, by the contract's formula. */
const RETAINED = 256 * 1024;
/** Each voter's own data budget, forwarded to it alone: four, five or six writes fit, by leader. */
const BUDGETS: Readonly<Record<VoterName, number>> = {
  voter1: MiB,
  voter2: MiB + RETAINED + 1,
  voter3: MiB + 2 * RETAINED + 3,
};
const WRITES = 8;
const PREFIX = "budget/";

const startCluster = clusterPerTest();
const noPartitions = await partitionsUnavailable();

/** A catalog value whose PUT body (as the client sends it) retains exactly RETAINED bytes. */
function budgetValue(id: string): { tag: string; id: string; pad: string } {
  const body = (pad: string) => JSON.stringify({ value: { tag: "budgetword", id, pad } });
  const rest = RETAINED - retainedBytesOf(body(""));
  if (rest % 4 !== 0) throw new RangeError(`no ASCII pad makes ${id}'s body retain ${RETAINED} bytes`);
  const value = { tag: "budgetword", id, pad: "x".repeat(rest / 4) };
  expect(retainedBytesOf(JSON.stringify({ value }))).toBe(RETAINED);
  return value;
}

async function start(): Promise<TestCluster> {
  return startCluster({
    env: {
      // Long enough that a leader whose followers are held keeps office (check-quorum) while the lane
      // fills and the control work under the refused IDs queues, so that work commits on its one attempt.
      KeyLoad__Raft__ElectionTimeoutMs: "5000",
      KeyLoad__Raft__HeartbeatIntervalMs: "100",
      KeyLoad__Raft__ReplicationDeadlineMs: "30000",
    },
    voterEnv: Object.fromEntries(
      Object.entries(BUDGETS).map(([name, bytes]) => [
        name,
        { KeyLoad__CommandAdmission__MaxRetainedBytes: String(bytes) },
      ]),
    ),
  });
}

interface Setup {
  readonly cluster: TestCluster;
  readonly leader: TestVoter;
  readonly followers: readonly TestVoter[];
  /** The tenant's client: one attempt per call, so a refusal is seen as it was answered. */
  readonly once: KeyLoadClient;
  /** The same tenant, retrying as applications do, for everything around the refusals. */
  readonly client: KeyLoadClient;
  /** A message leased before the lane filled, to be acknowledged under a refused ID. */
  readonly leased: { readonly messageId: string; readonly leaseToken: string };
}

async function setUp(): Promise<Setup> {
  const cluster = await start();
  const tenant = await cluster.createTenant();
  const client = cluster.client(tenant.apiKey, { adaptiveThrottle: false, requestTimeoutMs: 60_000 });
  const once = cluster.client(tenant.apiKey, {
    maxAttempts: 1,
    retryResourceExhausted: false,
    adaptiveThrottle: false,
    requestTimeoutMs: 60_000,
  });
  await client.putSubscription("budget-feed", PREFIX);
  await client.enqueue("budget-jobs", { job: 1 });
  const lease = await client.lease("budget-jobs", { max: 1, visibilityTimeoutMs: 600_000 });
  const message = lease.messages[0]!;
  const leader = await cluster.waitForLeader();
  const status = await cluster.adminClient().admissionStatus({ endpoint: leader.httpUrl });
  expect(status.commandAdmission.limits.maxRetainedBytes).toBe(BUDGETS[leader.name]);
  return {
    cluster,
    leader,
    followers: cluster.voters.filter((v) => v.name !== leader.name),
    once,
    client,
    leased: { messageId: message.messageId, leaseToken: lease.leaseToken! },
  };
}

/** Sends a write and records how it ended, without waiting for it. */
function send(once: KeyLoadClient, id: string, endpoint: string, ended: Map<string, unknown>): Promise<void> {
  return once.put(`${PREFIX}${id}`, budgetValue(id), { commandId: id, endpoint }).then(
    (result) => void ended.set(id, result),
    (error: unknown) => void ended.set(id, error),
  );
}

function expectCommandBytes(error: unknown, limitValue: number, inUse: number): void {
  expect(error).toBeInstanceOf(ResourceExhaustedError);
  expect(error).toMatchObject({
    status: 429,
    reason: "CommandBytes",
    governor: "command",
    lane: "data",
    details: { limit: "MaxRetainedBytes", limitValue, requested: RETAINED, inUse },
  });
}

/**
 * Waits until each write the leader took in (held, since nothing can commit) has settled after
 * replication resumed: those answered UnknownWriteOutcome are resolved under their own IDs.
 */
async function settleAdmitted(setup: Setup, ids: readonly string[], ended: Map<string, unknown>) {
  for (const id of ids) {
    if (ended.get(id) instanceof UnknownWriteOutcomeError || !ended.has(id)) {
      await setup.client.resolveOutcome(id, (o) => setup.client.put(`${PREFIX}${id}`, budgetValue(id), o));
    }
    expect(await setup.client.get(`${PREFIX}${id}`)).toMatchObject({ value: { id }, version: 1 });
  }
}

/**
 * Control work under each refused ID (a queue ack, then dispatches), sent to the leader while its data
 * lane is still full and replication held: it cannot commit yet, so it is not awaited. Waits until the
 * leader's control lane holds every one of them, admitted, and checks that the data lane is as full as
 * before. Returns how each ended, to be awaited once replication resumes.
 */
async function controlUnderRefusedIds(
  setup: Setup,
  refused: readonly string[],
  dataCommands: number,
): Promise<Promise<{ readonly commandId: string }>[]> {
  const { once, leader, leased } = setup;
  const at = { endpoint: leader.httpUrl };
  const [first, ...rest] = refused;
  const sent: Promise<{ readonly commandId: string }>[] = [
    once.ack("budget-jobs", leased.messageId, leased.leaseToken, { ...at, commandId: first! }),
    ...rest.map((id) => once.dispatch("budget-control", "after-refusal", { id }, { ...at, commandId: id })),
  ];
  // Awaited after the hold; one refused meanwhile must not count as unhandled before that.
  for (const write of sent) write.catch(() => undefined);
  const metric = (name: string, lane: string) =>
    metricOf(once, leader.httpUrl, `keyload_command_admission_${name}`, { lane });
  await vi.waitFor(
    async () => {
      // A refusal would have answered at once: each one still pending is held in the control lane.
      expect(await metric("commands", "control")).toBe(refused.length);
    },
    { timeout: 10_000, interval: 20 },
  );
  expect(await metric("commands", "data")).toBe(dataCommands);
  expect(await metric("retained_bytes", "data")).toBe(dataCommands * RETAINED);
  return sent;
}

/**
 * Nothing refused was published: not to reads, query, bulk-get, search or the subscription. The
 * control work sent under the refused IDs while the lane was full commits under them, and a data
 * write under one then conflicts with it.
 */
async function expectRefusedNeverPublished(
  setup: Setup,
  admitted: readonly string[],
  refused: readonly string[],
  control: readonly Promise<{ readonly commandId: string }>[],
) {
  const { client } = setup;
  for (const id of refused) {
    await expect(client.get(`${PREFIX}${id}`)).rejects.toBeInstanceOf(NotFoundError);
  }
  const published = (await client.query({ prefix: PREFIX, limit: 100 })).items.map((d) => d.key).sort();
  expect(published).toEqual(admitted.map((id) => `${PREFIX}${id}`).sort());
  const bulk = await client.bulkGet([...admitted, ...refused].map((id) => `${PREFIX}${id}`));
  expect(
    bulk.items
      .filter((item) => item.found)
      .map((item) => item.key)
      .sort(),
  ).toEqual(published);
  const hits = await client.search({ query: "budgetword", prefix: PREFIX, limit: 100 });
  expect(hits.hits.map((h) => h.key).sort()).toEqual(published);
  const delivered: string[] = [];
  for (;;) {
    const delivery = await client.deliver("budget-feed", { max: 100 });
    if (delivery.deliveryId === null) break;
    delivered.push(...delivery.changes.map((c) => c.key));
    await client.ackDelivery("budget-feed", delivery.deliveryId);
  }
  expect(delivered.sort()).toEqual(published);

  // Answered on their one attempt, each under the refused ID it was sent with.
  expect((await Promise.all(control)).map((c) => c.commandId)).toEqual(refused);
  for (const id of refused) {
    expect(await client.getCommand(id)).toMatchObject({ commandId: id, status: "committed" });
    await expect(client.put(`${PREFIX}${id}`, budgetValue(id), { commandId: id })).rejects.toBeInstanceOf(
      CommandIdConflictError,
    );
  }
}

describe("the data-byte budget on three voters", () => {
  it("refuses catalog writes past the leader's own budget, exactly as the formula predicts; none is published", async () => {
    const setup = await setUp();
    const { cluster, leader, followers, once } = setup;
    const budget = BUDGETS[leader.name];
    const fits = Math.floor(budget / RETAINED);
    const ids = Array.from({ length: WRITES }, (_, i) => `direct-${i}`);
    const ended = new Map<string, unknown>();
    // Paused followers take the appends into their socket buffers and answer nothing: the leader
    // commits nothing, so every write it admits stays reserved in its data lane.
    for (const f of followers) cluster.pause(f.name);
    let sent: Promise<void>[] = [];
    let refused: string[] = [];
    let control: Promise<{ readonly commandId: string }>[] = [];
    try {
      sent = ids.map((id) => send(once, id, leader.httpUrl, ended));
      // Every write accounted for: answered (refused), or held in the lane. The metrics are the
      // leader's own, readable while no quorum answers.
      await vi.waitFor(
        async () => {
          const held = await metricOf(once, leader.httpUrl, "keyload_command_admission_commands", {
            lane: "data",
          });
          expect(held + ended.size).toBe(WRITES);
        },
        { timeout: 10_000, interval: 50 },
      );
      expect(
        await metricOf(once, leader.httpUrl, "keyload_command_admission_commands", { lane: "data" }),
      ).toBe(fits);
      expect(
        await metricOf(once, leader.httpUrl, "keyload_command_admission_retained_bytes", { lane: "data" }),
      ).toBe(fits * RETAINED);
      refused = ids.filter((id) => ended.get(id) instanceof ResourceExhaustedError);
      expect(refused).toHaveLength(WRITES - fits);
      for (const id of refused) expectCommandBytes(ended.get(id), budget, fits * RETAINED);
      control = await controlUnderRefusedIds(setup, refused, fits);
    } finally {
      for (const f of followers) cluster.resume(f.name);
    }

    await Promise.all(sent);
    const admitted = ids.filter((id) => !refused.includes(id));
    await settleAdmitted(setup, admitted, ended);
    await expectRefusedNeverPublished(setup, admitted, refused, control);
  });

  it.skipIf(noPartitions !== undefined)(
    `returns the leader's refusal unchanged through a follower${noPartitions ? ` (skipped: ${noPartitions})` : ""}`,
    async () => {
      const setup = await setUp();
      const { cluster, leader, followers, once } = setup;
      const [forwarder, held] = followers as [TestVoter, TestVoter];
      const budget = BUDGETS[leader.name];
      const fits = Math.floor(budget / RETAINED);
      const ended = new Map<string, unknown>();
      const direct = Array.from({ length: fits }, (_, i) => `fill-${i}`);
      const forwarded = Array.from({ length: 3 }, (_, i) => `forwarded-${i}`);
      // The leader's appends reach neither follower (one paused, one cut off from what the leader
      // sends), while the forwarder's own requests to the leader, and their answers, still pass.
      cluster.pause(held.name);
      await cluster.cut([[leader.name, forwarder.name]]);
      let sent: Promise<void>[] = [];
      let control: Promise<{ readonly commandId: string }>[] = [];
      try {
        sent = direct.map((id) => send(once, id, leader.httpUrl, ended));
        await waitForDataCommands(once, leader.httpUrl, fits);
        expect(ended.size).toBe(0);
        for (const id of forwarded) await send(once, id, forwarder.httpUrl, ended);
        // Refused by the leader, by its own budget and usage, and passed on as it was.
        for (const id of forwarded) expectCommandBytes(ended.get(id), budget, fits * RETAINED);
        control = await controlUnderRefusedIds(setup, forwarded, fits);
      } finally {
        await cluster.heal();
        cluster.resume(held.name);
      }
      // The forwarder's own lane (whose budget differs) had room for each write the leader refused.
      expect(BUDGETS[forwarder.name]).not.toBe(budget);

      await Promise.all(sent);
      await settleAdmitted(setup, direct, ended);
      await expectRefusedNeverPublished(setup, direct, forwarded, control);
    },
  );
});
