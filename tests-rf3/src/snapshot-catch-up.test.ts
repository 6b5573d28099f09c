import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";

/**
 * Snapshot catch-up on three voter processes: a follower stopped while the others record several
 * snapshot points (and compact their logs past everything it has) comes back, is sent a copy of the
 * leader's state rather than entries, and then answers the same query results, versions and command
 * outcomes as the others.
 */
const WRITES = 160;
const SNAPSHOT_EVERY = 30;
const CHUNK_BYTES = 4096;

const startCluster = clusterPerTest();

/** The log lines of `text` that carry `message`, parsed. */
function linesWith(text: string, message: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.includes(`"msg":"${message}"`))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("snapshot catch-up", () => {
  it("brings a voter that missed several snapshots back by snapshot, to the same state", async () => {
    const cluster = await startCluster({
      env: {
        KeyLoad__Raft__SnapshotIntervalEntries: String(SNAPSHOT_EVERY),
        // Small chunks: the snapshot streams in many, several windows of them in flight.
        KeyLoad__Raft__SnapshotChunkBytes: String(CHUNK_BYTES),
      },
      // A different HTTP pool per voter, forwarded to each alone; nothing here comes near them.
      voterEnv: {
        voter1: { KeyLoad__HttpAdmission__MaxRequests: "30" },
        voter2: { KeyLoad__HttpAdmission__MaxRequests: "31" },
        voter3: { KeyLoad__HttpAdmission__MaxRequests: "32" },
      },
    });
    const tenant = await cluster.createTenant();
    const client = cluster.client(tenant.apiKey);
    const leader = await cluster.waitForLeader();
    const behind = cluster.voters.find((v) => v.name !== leader.name)!;
    await cluster.stop(behind.name);

    // Keys written more than once carry versions above 1; deletes leave holes; queues and
    // dispatch add state beside the catalog.
    for (let i = 0; i < WRITES; i++) {
      await client.put(`catch-up/${i % 60}`, { i, round: Math.floor(i / 60) });
      // The next key round, written one round ago and not deleted since.
      if (i >= 60 && i % 25 === 0) await client.delete(`catch-up/${(i + 1) % 60}`);
    }
    await client.enqueue("catch-up-jobs", { job: "after" });
    await client.dispatch("catch-up", "done", { writes: WRITES });
    const others = cluster.voters.filter((v) => v.name !== behind.name);
    for (const voter of others) {
      expect(
        linesWith(cluster.logs(voter.name), "snapshot point recorded and log compacted").length,
      ).toBeGreaterThanOrEqual(2);
    }

    await cluster.start(behind.name);
    await cluster.waitForReady();
    await expect
      .poll(() => linesWith(cluster.logs(behind.name), "installed snapshot from the leader").length, {
        timeout: 20_000,
      })
      .toBeGreaterThanOrEqual(1);
    // The others' logs stood on points with no file: the leader copied its state for this follower.
    expect(
      linesWith(cluster.logs(leader.name), "snapshot copied for a follower").length,
    ).toBeGreaterThanOrEqual(1);
    // Streamed in small chunks, more than the four a leader keeps in flight at once.
    const [received] = linesWith(cluster.logs(behind.name), "received snapshot from the leader");
    expect(received!.chunks).toBe(Math.ceil((received!.bytes as number) / CHUNK_BYTES));
    expect(received!.chunks).toBeGreaterThan(4);

    const states = [];
    for (const voter of cluster.voters) {
      const at = { endpoint: voter.httpUrl };
      states.push({
        name: voter.name,
        documents: (await client.query({ prefix: "catch-up/", limit: 100 }, at)).items,
        dispatch: (await client.readDispatch("catch-up", at)).directives,
        lastWrite: await client.getCommand(
          (await client.put(`marker/${voter.name}`, voter.name, at)).commandId,
          at,
        ),
      });
    }
    expect(states[0]!.documents.length).toBeGreaterThan(40);
    expect(states[0]!.documents.some((d) => d.version > 1)).toBe(true);
    for (const state of states.slice(1)) {
      expect(state.documents, `${state.name} against ${states[0]!.name}`).toEqual(states[0]!.documents);
      expect(state.dispatch).toEqual(states[0]!.dispatch);
      expect(state.lastWrite.status).toBe("committed");
    }
    const lease = await client.lease("catch-up-jobs", { max: 10 }, { endpoint: behind.httpUrl });
    expect(lease.messages.map((m) => m.body)).toEqual([{ job: "after" }]);
    await client.ack("catch-up-jobs", lease.messages[0]!.messageId, lease.leaseToken!);
  });
});
