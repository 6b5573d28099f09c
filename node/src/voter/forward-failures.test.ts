import { afterEach, describe, expect, it, vi } from "vitest";
import { TcpProxy } from "./test-fixtures/tcp-proxy.js";
import { call, VoterCluster } from "./test-fixtures/voter-cluster.js";

vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });

let cluster: VoterCluster | undefined;
let proxy: TcpProxy | undefined;
afterEach(async () => {
  await cluster?.dispose();
  await proxy?.close();
  cluster = undefined;
  proxy = undefined;
});

/**
 * voter2 reaches voter1 only through a relay the test controls, and voter1 leads, so every command
 * voter2 forwards crosses the relay. voter2's ReplicationDeadlineMs is `deadlineMs`.
 */
async function clusterWithRelayedForwards(deadlineMs: number): Promise<{ c: VoterCluster; relay: TcpProxy }> {
  const relay = await TcpProxy.start();
  proxy = relay;
  const c = await VoterCluster.start({
    dialPorts: (i, ports) => {
      relay.targetPort = ports[0]!;
      return i === 1 ? [relay.port, ports[1]!, ports[2]!] : ports;
    },
    voterEnv: { 1: { KeyLoad__Raft__ReplicationDeadlineMs: String(deadlineMs) } },
  });
  cluster = c;
  let leader = await c.waitForLeader();
  if (leader !== 0) {
    c.voter(leader).driver.raft.transferLeadership("voter1");
    const until = Date.now() + 5000;
    while (!c.voter(0).driver.isLeader() && Date.now() < until) await sleep(20);
    leader = await c.waitForLeader();
  }
  expect(leader).toBe(0);
  // The relayed connection is up: a forward through voter2 commits.
  const warm = await call(c.voter(1).httpUrl, "PUT", "/v1/catalog/warm", {
    body: { value: 0 },
    commandId: "w0",
  });
  expect(warm.status).toBe(200);
  return { c, relay };
}

async function waitForHeld(relay: TcpProxy, atLeast: number): Promise<void> {
  const until = Date.now() + 5000;
  while (relay.heldByteCount() < atLeast && Date.now() < until) await sleep(5);
}

/**
 * Retries a write with its command ID until it is acknowledged, as a client would: the first attempt
 * may still meet the connection the relay just cut, before voter2 notices and redials.
 */
async function retryUntilAcknowledged(url: string, key: string, value: number, commandId: string) {
  for (let attempt = 0; ; attempt++) {
    const answer = await call(url, "PUT", `/v1/catalog/${key}`, { body: { value }, commandId });
    if (answer.status !== 504 || attempt === 5) return answer;
    await sleep(100);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("a command forwarded from a follower", () => {
  it("answers UnknownWriteOutcome when the connection to the leader drops mid-forward, and a retry commits it once", async () => {
    const { c, relay } = await clusterWithRelayedForwards(10_000);
    const heldBefore = relay.heldByteCount();
    relay.hold();
    const pending = call(c.voter(1).httpUrl, "PUT", "/v1/catalog/k", {
      body: { value: 1 },
      commandId: "cut-1",
    });
    // The forward frame carries the command's payload: wait until it is stuck in the relay.
    await waitForHeld(relay, heldBefore + 40);
    await sleep(50);
    relay.cut();
    const answer = await pending;
    expect(answer).toMatchObject({
      status: 504,
      body: { error: { code: "UnknownWriteOutcome", reason: "ForwardInterrupted", commandId: "cut-1" } },
    });
    // The leader never saw it; the same command ID, retried, commits once.
    expect((await call(c.voter(0).httpUrl, "GET", "/v1/commands/cut-1")).status).toBe(404);
    const retried = await retryUntilAcknowledged(c.voter(1).httpUrl, "k", 1, "cut-1");
    expect(retried).toMatchObject({ status: 200, body: { commandId: "cut-1", version: 1 } });
  });

  it("answers UnknownWriteOutcome when the leader's answer does not come back within the deadline", async () => {
    const { c, relay } = await clusterWithRelayedForwards(1500);
    relay.hold();
    const started = Date.now();
    const answer = await call(c.voter(1).httpUrl, "PUT", "/v1/catalog/k", {
      body: { value: 2 },
      commandId: "late-1",
    });
    expect(answer).toMatchObject({
      status: 504,
      body: { error: { code: "UnknownWriteOutcome", commandId: "late-1" } },
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    relay.cut();
    const retried = await retryUntilAcknowledged(c.voter(1).httpUrl, "k", 2, "late-1");
    expect(retried).toMatchObject({ status: 200, body: { commandId: "late-1", version: 1 } });
  });

  it("answers UnknownWriteOutcome when the leader's answer is altered on the way", async () => {
    const { c, relay } = await clusterWithRelayedForwards(10_000);
    // Only answers to forwards travel this way on the connection; a changed bit fails the frame's
    // authentication, and the follower drops the connection with the answer unread.
    relay.rewriteReplies((chunk) => {
      chunk[chunk.length - 1]! ^= 0x01;
      return chunk;
    });
    const answer = await call(c.voter(1).httpUrl, "PUT", "/v1/catalog/k", {
      body: { value: 3 },
      commandId: "garbled-1",
    });
    expect(answer).toMatchObject({
      status: 504,
      body: { error: { code: "UnknownWriteOutcome", reason: "ForwardInterrupted", commandId: "garbled-1" } },
    });
    // Here the leader did commit it: the retry finds the durable outcome instead of applying again.
    relay.rewriteReplies((chunk) => chunk);
    const retried = await retryUntilAcknowledged(c.voter(1).httpUrl, "k", 3, "garbled-1");
    expect(retried).toMatchObject({ status: 200, body: { commandId: "garbled-1", version: 1 } });
  });
});
