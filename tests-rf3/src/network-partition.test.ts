import { execFileSync } from "node:child_process";
import {
  partitionsUnavailable,
  type TestCluster,
  VOTER_NAMES,
  type VoterLink,
} from "@keyload/apphost/testing";
import {
  type KeyLoadClient,
  NotFoundError,
  UnavailableError,
  UnknownWriteOutcomeError,
} from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clientsPerTest } from "./test-fixtures/clients-per-test.js";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { failure } from "./test-fixtures/failure.js";

/**
 * Long enough that the isolated old leader, stepping down one to two election timeouts after the cut
 * (check-quorum), is still leading when the first writes reach it, however slow the machine.
 */
const ELECTION_TIMEOUT_MS = 2000;
/** How many writes the isolated old leader is sent once it has stepped down. */
const WRITES_AFTER_STEP_DOWN = 3;

// Partitions need root and iptables; elsewhere this is skipped, and says why.
const noPartitions = await partitionsUnavailable();
const startCluster = clusterPerTest();
const connect = clientsPerTest();

/** The iptables chains this test process holds: the testing API names them after its pid. */
function ourChains(): string[] {
  const rules = execFileSync("iptables", ["-w", "-S"], { encoding: "utf8" });
  return [...rules.matchAll(new RegExp(`-N (KLAH-${process.pid}-\\d+)`, "g"))].map((m) => m[1]!);
}

/** How many links the rules of this process drop: all in one chain of its own. */
function droppedLinks(): number {
  const chains = ourChains();
  expect(chains).toHaveLength(1);
  const rules = execFileSync("iptables", ["-w", "-S", chains[0]!], { encoding: "utf8" });
  return rules.split("\n").filter((line) => line.startsWith("-A ")).length;
}

async function startFastCluster(): Promise<TestCluster> {
  return startCluster({
    env: {
      KeyLoad__Raft__ElectionTimeoutMs: String(ELECTION_TIMEOUT_MS),
      KeyLoad__Raft__HeartbeatIntervalMs: "100",
      // A write the isolated leader cannot commit is answered within the test's patience.
      KeyLoad__Raft__ReplicationDeadlineMs: "1500",
    },
  });
}

/** What one voter says of itself on its liveness route: its role and the leader it follows. */
async function selfView(ops: KeyLoadClient, endpoint: string): Promise<{ role: unknown; leader: unknown }> {
  const { detail } = await ops.live({ endpoint });
  return { role: detail.role, leader: detail.leader };
}

/** The document under `key` as each voter reads it, or NotFound. */
async function everyVoterReads(cluster: TestCluster, reader: KeyLoadClient, key: string): Promise<unknown[]> {
  return Promise.all(
    cluster.voters.map((v) =>
      reader.get(key, { endpoint: v.httpUrl }).catch((error: unknown) => {
        if (error instanceof NotFoundError) return "NotFound";
        throw error;
      }),
    ),
  );
}

describe.skipIf(noPartitions !== undefined)(
  `network partitions${noPartitions ? ` (skipped: ${noPartitions})` : ""}`,
  () => {
    it("an old leader isolated without quorum acknowledges no write, the majority elects, and after heal every voter converges", async () => {
      const cluster = await startFastCluster();
      const old = await cluster.waitForLeader();
      const majority = VOTER_NAMES.filter((name) => name !== old.name);
      const admin = cluster.adminClient();
      const ops = cluster.client();
      await admin.put("before", "whole");

      await cluster.partition([[old.name], majority]);
      expect(droppedLinks()).toBe(4);

      // Writes sent to the old leader alone, one attempt each, while it still believes it leads and
      // after it has stepped down: none may be acknowledged.
      const isolated = connect({
        endpoints: [old.httpUrl],
        apiKey: cluster.adminKey,
        maxAttempts: 1,
        adaptiveThrottle: false,
      });
      const unknown: string[] = [];
      const refused: string[] = [];
      let whileLeading = 0;
      let afterStepDown = 0;
      const started = Date.now();
      for (let i = 0; afterStepDown < WRITES_AFTER_STEP_DOWN; i++) {
        expect(Date.now() - started, "the isolated leader never stepped down").toBeLessThan(30_000);
        const steppedDown = (await selfView(ops, old.httpUrl)).role !== "leader";
        const error = await failure(isolated.put(`isolated/${i}`, { i }, { commandId: `isolated-${i}` }));
        if (error instanceof UnknownWriteOutcomeError) unknown.push(`isolated-${i}`);
        else if (error instanceof UnavailableError) refused.push(`isolated-${i}`);
        else throw error;
        if (steppedDown) afterStepDown++;
        else whileLeading++;
      }
      // The case this test is for happened: writes reached the old leader while it still led, and it
      // took them (their outcome unknown) rather than acknowledge them.
      expect(whileLeading).toBeGreaterThan(0);
      expect(unknown.length).toBeGreaterThan(0);

      // Meanwhile the majority elected a leader of its own, and serves.
      const next = await cluster.waitForLeader({ excluding: [old.name], timeoutMs: 20_000 });
      expect(majority).toContain(next.name);
      const majorityClient = connect({
        endpoints: majority.map((name) => cluster.voter(name).httpUrl),
        apiKey: cluster.adminKey,
      });
      for (let j = 0; j < 5; j++) {
        expect(await majorityClient.put(`majority/${j}`, { j })).toMatchObject({ version: 1 });
      }

      await cluster.heal();
      expect(ourChains()).toEqual([]);
      await cluster.waitForReady(20_000);

      // Nothing the isolated leader was sent is present, unless its durable outcome says it committed.
      const sent = [...unknown, ...refused];
      for (const commandId of sent) {
        const i = Number(commandId.slice("isolated-".length));
        const outcome = await admin.getCommand(commandId).catch((error: unknown) => {
          if (error instanceof NotFoundError) return undefined;
          throw error;
        });
        const docs = await everyVoterReads(cluster, admin, `isolated/${i}`);
        if (outcome === undefined) {
          expect(docs, `isolated write ${commandId}`).toEqual(["NotFound", "NotFound", "NotFound"]);
        } else {
          // Only a write whose outcome was unknown can have committed: Unavailable submitted nothing.
          expect(unknown).toContain(commandId);
          expect(outcome).toMatchObject({
            status: "committed",
            result: { key: `isolated/${i}`, version: 1 },
          });
        }
      }
      // Each unknown write resolves under its command ID to exactly one application.
      for (const commandId of unknown) {
        const i = Number(commandId.slice("isolated-".length));
        const key = `isolated/${i}`;
        const resolved = await admin.resolveOutcome(commandId, (o) => admin.put(key, { i }, o));
        expect(resolved).toEqual({ commandId, key, version: 1 });
      }

      // Every voter, the old leader too, holds the same documents at the same versions.
      const keys = ["before", ...Array.from({ length: 5 }, (_, j) => `majority/${j}`)];
      keys.push(...unknown.map((id) => `isolated/${id.slice("isolated-".length)}`));
      for (const key of keys) {
        const docs = await everyVoterReads(cluster, admin, key);
        expect(docs[0], key).toMatchObject({ key, version: 1 });
        expect(docs, key).toEqual([docs[0], docs[0], docs[0]]);
      }
    });

    it("cuts one way: a leader the others cannot hear is replaced and still hears its successor; each cut replaces the rules, heal and dispose remove them", async () => {
      const cluster = await startFastCluster();
      const old = await cluster.waitForLeader();
      const others = VOTER_NAMES.filter((name) => name !== old.name);
      const ops = cluster.client();

      await cluster.cut(others.map((o): VoterLink => [old.name, o]));
      expect(droppedLinks()).toBe(2);
      // Its heartbeats no longer reach the followers, so they elect one of themselves...
      const next = await cluster.waitForLeader({ excluding: [old.name], timeoutMs: 20_000 });
      expect(others).toContain(next.name);
      // ...whose messages still reach the old leader: it follows the successor it cannot answer.
      await expect
        .poll(() => selfView(ops, old.httpUrl), { timeout: 10_000, interval: 100 })
        .toEqual({ role: "follower", leader: next.name });
      const writer = connect({
        endpoints: others.map((name) => cluster.voter(name).httpUrl),
        apiKey: cluster.adminKey,
      });
      await writer.put("written-while-cut", true);

      await cluster.heal();
      expect(ourChains()).toEqual([]);
      await cluster.waitForReady(20_000);
      const admin = cluster.adminClient();
      expect(await admin.get("written-while-cut", { endpoint: old.httpUrl })).toMatchObject({ value: true });

      // Each partition or cut replaces the rules in place, and dispose removes them.
      await cluster.partition([["voter1"], ["voter2"], ["voter3"]]);
      expect(droppedLinks()).toBe(6);
      await cluster.cut([["voter1", "voter2"]]);
      expect(droppedLinks()).toBe(1);
      await cluster.dispose();
      expect(ourChains()).toEqual([]);
    });
  },
);
