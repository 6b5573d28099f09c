import { NotFoundError, UnavailableError, UnknownWriteOutcomeError } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clientsPerTest } from "./test-fixtures/clients-per-test.js";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { failure } from "./test-fixtures/failure.js";
import { SentCommandIds } from "./test-fixtures/sent-command-ids.js";

/**
 * The election timeout is long enough that killing both followers leaves the leader in office for the
 * first write, and the replication deadline longer, so that it steps down (check-quorum) while that
 * write waits for a commit.
 */
const ELECTION_TIMEOUT_MS = 2_000;
const REPLICATION_DEADLINE_MS = 3_000;
/** How many writes the lone voter is sent once it has stepped down. */
const WRITES_AFTER_STEP_DOWN = 3;

const startCluster = clusterPerTest();
const connect = clientsPerTest();

describe("minority rejection", () => {
  it("a voter left without quorum acknowledges no write, before or after it steps down; with the others back each unknown write applies once", async () => {
    const cluster = await startCluster({
      env: {
        KeyLoad__Raft__ElectionTimeoutMs: String(ELECTION_TIMEOUT_MS),
        KeyLoad__Raft__HeartbeatIntervalMs: "50",
        KeyLoad__Raft__ReplicationDeadlineMs: String(REPLICATION_DEADLINE_MS),
      },
    });
    const leader = await cluster.waitForLeader();
    const followers = cluster.voters.filter((v) => v.name !== leader.name).map((v) => v.name);
    await Promise.all(followers.map((name) => cluster.kill(name)));

    // One attempt each, at the lone voter only: what it answers is what a caller would see.
    const once = connect({
      endpoints: [leader.httpUrl],
      apiKey: cluster.adminKey,
      maxAttempts: 1,
      adaptiveThrottle: false,
    });
    const ops = cluster.client();
    const sent = new SentCommandIds();
    try {
      const unknown: number[] = [];
      const refused: number[] = [];
      let afterStepDown = 0;
      const started = Date.now();
      for (let i = 0; afterStepDown < WRITES_AFTER_STEP_DOWN; i++) {
        expect(Date.now() - started, "the lone leader never stepped down").toBeLessThan(
          10 * ELECTION_TIMEOUT_MS,
        );
        const steppedDown = (await ops.live({ endpoint: leader.httpUrl })).detail.role !== "leader";
        const error = await failure(once.put(`minority/${i}`, { i }, { commandId: `minority-${i}` }));
        if (error instanceof UnknownWriteOutcomeError) {
          expect(error).toMatchObject({ status: 504, commandId: `minority-${i}`, endpoint: leader.httpUrl });
          unknown.push(i);
        } else if (error instanceof UnavailableError) {
          expect(error).toMatchObject({ status: 503, commandId: `minority-${i}` });
          refused.push(i);
        } else {
          throw error;
        }
        if (steppedDown) afterStepDown++;
      }
      // The first write found it still leading: it took the write, could not commit it, and said so.
      expect(unknown[0], "the write sent while it still led").toBe(0);
      // Stepped down, it has no leader to offer and serves no read either.
      await expect(once.get("minority/0")).rejects.toMatchObject({ code: "Unavailable", status: 503 });

      await Promise.all(followers.map((name) => cluster.start(name)));
      await cluster.waitForReady(30_000);
      const client = cluster.adminClient();
      expect(await client.put("minority/after", true)).toMatchObject({ version: 1 });
      // Whichever voter leads now, an unknown write has its one application: the old leader's entry,
      // committed when it is elected again, or the resubmission, when that entry was dropped.
      for (const i of unknown) {
        const commandId = `minority-${i}`;
        const key = `minority/${i}`;
        expect(await client.resolveOutcome(commandId, (o) => client.put(key, { i }, o))).toEqual({
          commandId,
          key,
          version: 1,
        });
        expect(await client.getCommand(commandId)).toMatchObject({
          status: "committed",
          result: { key, version: 1 },
        });
        for (const voter of cluster.voters) {
          expect(await client.get(key, { endpoint: voter.httpUrl })).toEqual({
            key,
            value: { i },
            version: 1,
          });
        }
      }
      // The first write was resolved by sending it again.
      expect(sent.count("minority-0")).toBeGreaterThanOrEqual(2);
      // Unavailable submitted nothing: none of those writes ever applied.
      for (const i of refused) {
        expect(await failure(client.getCommand(`minority-${i}`))).toBeInstanceOf(NotFoundError);
        expect(await failure(client.get(`minority/${i}`))).toBeInstanceOf(NotFoundError);
      }
    } finally {
      sent.close();
    }
  });
});
