import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_KEY, VoterCluster } from "../../node/src/voter/testing/voter-cluster.js";
import { NotFoundError, UnavailableError, UnknownWriteOutcomeError } from "./index.js";
import { failure } from "./testing/failure.js";
import { SentCommandIds } from "./testing/sent-command-ids.js";
import { TestClients } from "./testing/test-clients.js";

/**
 * UnknownWriteOutcome and Unavailable as real voters answer them: a leader whose followers are gone
 * takes a write it cannot commit, then steps down and has no leader to offer. The election timeout is
 * long enough that stopping both followers leaves the leader in office for the first write, and the
 * replication deadline long enough for it to step down meanwhile.
 */
const ELECTION_TIMEOUT_MS = 1_000;
const REPLICATION_DEADLINE_MS = 4_000;

let cluster: VoterCluster;
const clients = new TestClients({ apiKey: ADMIN_KEY, adaptiveThrottle: false });
const connect = clients.connect.bind(clients);

function url(i: number): string {
  return cluster.voter(i).httpUrl;
}

beforeAll(async () => {
  cluster = await VoterCluster.start({
    env: {
      KeyLoad__Raft__ElectionTimeoutMs: String(ELECTION_TIMEOUT_MS),
      KeyLoad__Raft__HeartbeatIntervalMs: "50",
      KeyLoad__Raft__ReplicationDeadlineMs: String(REPLICATION_DEADLINE_MS),
    },
  });
  await cluster.waitForLeader();
}, 30_000);

afterAll(async () => {
  await clients.close();
  await cluster?.dispose();
});

describe("KeyLoadClient when the cluster loses its quorum", () => {
  it("throws UnknownWriteOutcomeError and UnavailableError from real voters; the write resolves to one application", async () => {
    const leader = await cluster.waitForLeader();
    const followers = [0, 1, 2].filter((i) => i !== leader);
    const leaderUrl = url(leader);
    const everyUrl = [0, 1, 2].map(url);
    await cluster.stop(followers[0]!);
    await cluster.stop(followers[1]!);

    // One attempt at the leader alone: it appends the write, cannot commit it, and says so.
    const once = connect([leaderUrl], { maxAttempts: 1 });
    const sent = new SentCommandIds();
    const unknown = await failure(once.put("quorum/k", { n: 1 }, { commandId: "quorum-1" }));
    expect(unknown).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(unknown).toMatchObject({
      code: "UnknownWriteOutcome",
      status: 504,
      commandId: "quorum-1",
      endpoint: leaderUrl,
    });

    // Check-quorum makes it step down; from then on nothing is submitted at all.
    const deadline = Date.now() + 10 * ELECTION_TIMEOUT_MS;
    let read: unknown;
    do {
      read = await failure(once.get("quorum/k"));
    } while (!(read instanceof UnavailableError) && Date.now() < deadline);
    expect(read).toMatchObject({ code: "Unavailable", status: 503 });
    const refused = await failure(once.put("quorum/never", 1, { commandId: "quorum-never" }));
    expect(refused).toBeInstanceOf(UnavailableError);
    expect(refused).toMatchObject({ status: 503, commandId: "quorum-never" });

    await cluster.restart(followers[0]!);
    await cluster.restart(followers[1]!);
    await cluster.waitForLeader(20_000);
    const client = connect(everyUrl);
    // Whichever voter leads now, the write has its one application: the old leader's entry, committed
    // when it is elected again, or the resubmission, when that entry is dropped.
    const resolved = await client.resolveOutcome("quorum-1", (o) => client.put("quorum/k", { n: 1 }, o));
    sent.close();
    expect(resolved).toEqual({ commandId: "quorum-1", key: "quorum/k", version: 1 });
    expect(sent.count("quorum-1")).toBeGreaterThanOrEqual(2);
    for (const endpoint of everyUrl) {
      expect(await client.get("quorum/k", { endpoint })).toEqual({
        key: "quorum/k",
        value: { n: 1 },
        version: 1,
      });
    }
    expect(await client.getCommand("quorum-1")).toMatchObject({
      status: "committed",
      result: { version: 1 },
    });
    expect(await failure(client.getCommand("quorum-never"))).toBeInstanceOf(NotFoundError);
    expect(await failure(client.get("quorum/never"))).toBeInstanceOf(NotFoundError);
  }, 60_000);
});
