import { type KeyLoadClient, type LeasedMessage, ResourceExhaustedError } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { metricOf } from "./test-fixtures/voter-metrics.js";

/**
 * Control stays available while the data lane is full, on three voter processes: a flood of catalog
 * writes keeps every voter's data lane at its cap (refusing with CommandCount or CommandBytes), and
 * meanwhile queue leases with ACK/NACK/renew, subscription deliveries and their acks, membership
 * writes and dispatch are each admitted on the first attempt and commit. Control work has its own
 * reserve and goes first at the command scheduler, so a data flood cannot starve it.
 */
const DATA_LANE_COMMANDS = { voter1: 4, voter2: 5, voter3: 6 } as const;
const FLOODERS = 24;

const startCluster = clusterPerTest();

interface Flood {
  readonly refusals: () => number;
  readonly accepted: () => number;
  stop(): Promise<void>;
}

/**
 * Writers that each put through `endpoint` as fast as they are answered, refusals included, until
 * stopped. Through the leader: through a follower, the follower's own lane would cap what reaches it.
 */
function flood(client: KeyLoadClient, endpoint: string): Flood {
  let running = true;
  let refusals = 0;
  let accepted = 0;
  const unexpected: unknown[] = [];
  const loops = Array.from({ length: FLOODERS }, async (_, w) => {
    for (let n = 0; running; n++) {
      try {
        await client.put(`flood/${w}`, { n, pad: "x".repeat(2_000) }, { endpoint });
        accepted++;
      } catch (error) {
        if (
          error instanceof ResourceExhaustedError &&
          error.governor === "command" &&
          error.lane === "data"
        ) {
          refusals++;
        } else {
          unexpected.push(error);
        }
        // Let the loop's peers and the control work in between; a refusal comes back at once.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  });
  return {
    refusals: () => refusals,
    accepted: () => accepted,
    async stop() {
      running = false;
      await Promise.all(loops);
      expect(unexpected).toEqual([]);
    },
  };
}

describe("control work while the data lane is full", () => {
  it("admits and commits acks, nacks, renews, deliveries, membership and dispatch while data writes are refused", async () => {
    const cluster = await startCluster({
      env: {
        // HTTP admission lets the flood through, so the command lanes are what it fills.
        KeyLoad__HttpAdmission__MaxRequests: "128",
        KeyLoad__HttpAdmission__MaxRequestsPerTenant: "128",
        KeyLoad__HttpAdmission__MaxRequestsPerPrincipal: "128",
        KeyLoad__CommandAdmission__MaxCommandsPerTenant: "64",
        KeyLoad__CommandAdmission__MaxCommandsPerPrincipal: "64",
      },
      voterEnv: Object.fromEntries(
        Object.entries(DATA_LANE_COMMANDS).map(([name, n]) => [
          name,
          { KeyLoad__CommandAdmission__MaxCommands: String(n) },
        ]),
      ),
    });
    const tenant = await cluster.createTenant();
    const worker = cluster.client(tenant.apiKey, { adaptiveThrottle: false });
    await worker.putSubscription("flood-feed", "flood/");
    for (let i = 0; i < 6; i++) await worker.enqueue("flood-jobs", { i });
    const leader = await cluster.waitForLeader();

    const flooding = flood(
      cluster.client(tenant.apiKey, {
        maxAttempts: 1,
        retryResourceExhausted: false,
        adaptiveThrottle: false,
      }),
      leader.httpUrl,
    );
    try {
      // The flood has filled the leader's data lane: it holds as many commands as its cap allows.
      await expect
        .poll(
          () => metricOf(worker, leader.httpUrl, "keyload_command_admission_commands", { lane: "data" }),
          {
            timeout: 20_000,
            interval: 20,
          },
        )
        .toBe(DATA_LANE_COMMANDS[leader.name]);
      await expect.poll(flooding.refusals, { timeout: 20_000 }).toBeGreaterThan(FLOODERS);

      // Control work, one attempt each: a refusal would throw. Through the leader and a follower.
      const follower = cluster.voters.find((v) => v.name !== leader.name)!;
      for (const voter of [leader, follower]) {
        const refusedBefore = flooding.refusals();
        const control = cluster.client(tenant.apiKey, {
          maxAttempts: 1,
          retryResourceExhausted: false,
          adaptiveThrottle: false,
        });
        const at = { endpoint: voter.httpUrl };

        // Six were enqueued and each pass settles at most three (one nacked back), so three are leased.
        const lease = await control.lease("flood-jobs", { max: 3, visibilityTimeoutMs: 60_000 }, at);
        expect(lease.messages).toHaveLength(3);
        const [first, second, third] = lease.messages as [LeasedMessage, LeasedMessage, LeasedMessage];
        const token = lease.leaseToken!;
        expect((await control.renew("flood-jobs", first.messageId, token, at)).messageId).toBe(
          first.messageId,
        );
        expect((await control.nack("flood-jobs", second.messageId, token, at)).deadLettered).toBe(false);
        await control.ack("flood-jobs", third.messageId, token, at);
        await control.ack("flood-jobs", first.messageId, token, at);

        const delivery = await control.deliver("flood-feed", { max: 50 }, at);
        expect(delivery.changes.length).toBeGreaterThan(0);
        await control.ackDelivery("flood-feed", delivery.deliveryId!, at);

        const member = await control.putMember(
          `silo-${voter.name}`,
          { status: "active", address: "10.0.0.1:11111" },
          at,
        );
        expect(member.commandId).toBeTypeOf("string");
        const dispatched = await control.dispatch("flood-control", "rebalance", { via: voter.name }, at);
        expect(dispatched.sequence).toBeGreaterThan(0);

        for (const id of [member.commandId, dispatched.commandId, delivery.commandId]) {
          expect(await control.getCommand(id, at)).toMatchObject({ status: "committed" });
        }
        // Data writes were refused all along: the lane stayed full while control work committed.
        expect(flooding.refusals()).toBeGreaterThan(refusedBefore);
      }
    } finally {
      await flooding.stop();
    }
    expect(flooding.accepted()).toBeGreaterThan(0);
  });
});
