import { connect, createServer, type Server, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { pickFreePort } from "../net/free-ports.js";
import { InMemoryClusterId } from "./cluster-id.js";
import { encodeFrame, FrameDecoder } from "./frame-codec.js";
import { InMemoryMemberIncarnations } from "./member-incarnations.js";
import { PeerInterruptedError, PeerRemoteError, PeerUnavailableError } from "./peer-errors.js";
import {
  decodeHello,
  encodeAnnouncement,
  encodeChallenge,
  encodeCredentials,
  encodeRefusal,
  FrameType,
  NONCE_BYTES,
  PROOF_BYTES,
} from "./peer-frames.js";
import type { PeerTransport } from "./peer-transport.js";
import { newEphemeralKey } from "./session-keys.js";
import {
  allConnected,
  CLUSTER_ID,
  heartbeat,
  LIMITS,
  type LogLine,
  PeerFixture,
  SECRET,
  waitFor,
} from "./test-fixtures/peer-fixture.js";
import { appendOf } from "./test-fixtures/raft-message-arbitrary.js";

let fixture: PeerFixture;
const cleanups: (() => void | Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await fixture?.closeAll();
});

async function threeVoters(): Promise<Record<string, PeerTransport>> {
  fixture = await PeerFixture.create(["voter1", "voter2", "voter3"]);
  const transports = {
    voter1: await fixture.start("voter1"),
    voter2: await fixture.start("voter2"),
    voter3: await fixture.start("voter3"),
  };
  await allConnected(transports);
  return transports;
}

function find(lines: readonly LogLine[], pattern: RegExp): LogLine | undefined {
  return lines.find((line) => pattern.test(line.msg));
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a rejection");
}

describe("PeerTransport", () => {
  it("tells each peer's wall clock, from the handshake in either direction, never ahead of it", async () => {
    const hourAhead = () => Date.now() + 3_600_000;
    fixture = await PeerFixture.create(["voter1", "voter2"]);
    const voter1 = await fixture.start("voter1");
    const voter2 = await fixture.start("voter2", { wallMs: hourAhead });
    await waitFor(
      () => voter1.peerInfo("voter2")?.connected === true && voter2.peerInfo("voter1")?.connected === true,
    );
    const before = Date.now();
    const ahead = voter1.peerInfo("voter2")!.wallMs!;
    const behind = voter2.peerInfo("voter1")!.wallMs!;
    const after = Date.now();
    expect(ahead).toBeLessThanOrEqual(after + 3_600_000);
    expect(ahead).toBeGreaterThan(before + 3_600_000 - 1_000);
    expect(behind).toBeLessThanOrEqual(after);
    expect(behind).toBeGreaterThan(before - 1_000);
    // Read later, the reading has moved on by the time in between.
    await sleep(50);
    expect(voter1.peerInfo("voter2")!.wallMs!).toBeGreaterThanOrEqual(ahead + 45);
  });

  it("delivers messages both ways among three voters and shares their HTTP URLs", async () => {
    const t = await threeVoters();
    const ids = Object.keys(t);
    for (const from of ids) for (const to of ids) if (from !== to) t[from]!.send(heartbeat(from, to));
    t.voter1!.send(appendOf(64, 1024));
    await waitFor(
      () => ids.every((id) => fixture.inbox(id).length >= 2) && fixture.inbox("voter2").length === 3,
    );
    for (const id of ids) {
      expect(fixture.inbox(id).every((m) => m.to === id)).toBe(true);
      expect(new Set(fixture.inbox(id).map((m) => m.from))).toEqual(new Set(ids.filter((x) => x !== id)));
    }
    expect(fixture.inbox("voter2").find((m) => m.type === "append")).toEqual(appendOf(64, 1024));
    const port2 = fixture.address("voter2").port;
    expect(t.voter1!.peerInfo("voter2")).toEqual({
      connected: true,
      httpUrl: `http://127.0.0.1:${port2 + 1}`,
      wallMs: expect.any(Number),
      // What voter1's own connection to voter2's address reached.
      memberId: "voter2",
    });
    expect(t.voter1!.peerInfo("nobody")).toBeNull();
    const stats = t.voter1!.stats();
    expect(stats.framesSent).toBeGreaterThanOrEqual(3);
    expect(stats.bytesSent).toBeGreaterThan(64 * 1024);
    expect(stats.framesReceived).toBeGreaterThanOrEqual(2);
    expect(stats.sendDrops + stats.receiveDrops + stats.authFailures + stats.protocolErrors).toBe(0);
  });

  it("drops (and counts) messages to a peer that is not connected", async () => {
    fixture = await PeerFixture.create(["voter1", "voter2"]);
    const voter1 = await fixture.start("voter1");
    voter1.send(heartbeat("voter1", "voter2"));
    voter1.send(heartbeat("voter1", "voter9"));
    expect(voter1.stats().sendDrops).toBe(2);
    expect(voter1.peerInfo("voter2")).toEqual({
      connected: false,
      httpUrl: null,
      wallMs: null,
      memberId: null,
    });
  });

  it("refuses a peer with a wrong secret in both directions, and logs it on both sides", async () => {
    fixture = await PeerFixture.create(["voter1", "voter2", "voter3"]);
    const voter1 = await fixture.start("voter1");
    const voter2 = await fixture.start("voter2");
    const voter3 = await fixture.start("voter3", { secret: "not the cluster secret at all" });
    await allConnected({ voter1, voter2 });
    const refusedBy = (id: string, dialer: string) =>
      fixture
        .log(id)
        .find(
          (l) =>
            l.peerId === dialer &&
            /peer handshake refused: .* failed to prove the cluster secret/.test(l.msg),
        );
    await waitFor(() =>
      ["voter1", "voter3"].every((id) => refusedBy(id, id === "voter1" ? "voter3" : "voter1")),
    );
    const acceptorSide = refusedBy("voter1", "voter3")!;
    expect(acceptorSide).toMatchObject({ nodeId: "voter1", peerId: "voter3", reason: "BadProof" });
    expect(acceptorSide.remoteAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    // As dialers, each hears the other's refusal and logs it too.
    const dialerSide = find(fixture.log("voter3"), /voter1 refused the connection \(BadProof\)/);
    expect(dialerSide).toMatchObject({ nodeId: "voter3", peerId: "voter1", reason: "Refused" });
    expect(voter1.peerInfo("voter3")?.connected).toBe(false);
    expect(voter3.peerInfo("voter1")?.connected).toBe(false);
    voter3.send(heartbeat("voter3", "voter1"));
    expect(fixture.inbox("voter1")).toEqual([]);
    expect(voter1.stats().authFailures).toBeGreaterThan(0);
    const everything = JSON.stringify([...fixture.logs.values()]);
    expect(everything).not.toContain(SECRET);
    expect(everything).not.toContain("not the cluster secret");
  });

  it("refuses a node id that is not in the voter list, even with the right secret", async () => {
    fixture = await PeerFixture.create(["voter1", "voter2"]);
    await fixture.start("voter1");
    const voter1 = fixture.address("voter1");
    const port = fixture.address("voter2").port;
    const intruder = await fixture.start("intruder", {
      port,
      voters: [voter1, { id: "intruder", host: "127.0.0.1", port }],
    });
    await waitFor(() => find(fixture.log("voter1"), /intruder is not a voter/) !== undefined);
    expect(find(fixture.log("voter1"), /intruder is not a voter/)).toMatchObject({
      nodeId: "voter1",
      peerId: "intruder",
      reason: "UnknownPeer",
    });
    await waitFor(
      () => find(fixture.log("intruder"), /voter1 refused the connection \(UnknownPeer\)/) !== undefined,
    );
    expect(intruder.peerInfo("voter1")?.connected).toBe(false);
  });

  it("refuses a connection that reached another voter than the one dialed", async () => {
    fixture = await PeerFixture.create(["voter1", "voter2", "voter3"]);
    const voter3 = fixture.address("voter3");
    const voter1 = await fixture.start("voter1", {
      voters: [fixture.address("voter1"), { ...voter3, id: "voter2" }, voter3],
    });
    await fixture.start("voter3");
    const misdialed = /voter1 dialed voter2 at voter3's address/;
    await waitFor(() => find(fixture.log("voter3"), misdialed) !== undefined);
    expect(find(fixture.log("voter3"), misdialed)).toMatchObject({ peerId: "voter1", reason: "WrongPeer" });
    await waitFor(() => voter1.peerInfo("voter3")?.connected === true);
    expect(voter1.peerInfo("voter2")?.connected).toBe(false);
  });

  it("refuses to join when canonical limits differ, naming the limit and both values on both sides", async () => {
    fixture = await PeerFixture.create(["voter1", "voter2"]);
    const voter1 = await fixture.start("voter1");
    const voter2 = await fixture.start("voter2", { canonicalLimits: { ...LIMITS, maxMutationBytes: 1024 } });
    const mismatch = /maxMutationBytes is (8388608|1024) on voter\d but (8388608|1024) on voter\d/;
    await waitFor(() =>
      ["voter1", "voter2"].every((id) => fixture.log(id).filter((l) => mismatch.test(l.msg)).length >= 2),
    );
    expect(
      fixture.log("voter1").find((l) => mismatch.test(l.msg) && l.reason === "LimitsMismatch")?.msg,
    ).toContain(
      "canonical limits differ between voter1 and voter2: maxMutationBytes is 8388608 on voter1 but 1024 on voter2",
    );
    expect(fixture.log("voter2").find((l) => mismatch.test(l.msg) && l.reason === "Refused")?.msg).toContain(
      "voter1 refused the connection (LimitsMismatch)",
    );
    expect(voter1.peerInfo("voter2")?.connected).toBe(false);
    expect(voter2.peerInfo("voter1")?.connected).toBe(false);
  });

  it("refuses a peer of another cluster, naming both cluster IDs on both sides", async () => {
    fixture = await PeerFixture.create(["voter1", "voter2"]);
    const voter1 = await fixture.start("voter1");
    const voter2 = await fixture.start("voter2", { clusterId: new InMemoryClusterId("c-other") });
    const mismatch = /belongs to cluster (c-test|c-other) but voter\d to cluster (c-test|c-other)/;
    await waitFor(() => ["voter1", "voter2"].every((id) => find(fixture.log(id), mismatch) !== undefined));
    expect(find(fixture.log("voter1"), /voter2 belongs to cluster c-other/)).toMatchObject({
      reason: "ClusterMismatch",
    });
    expect(voter1.peerInfo("voter2")?.connected).toBe(false);
    expect(voter2.peerInfo("voter1")?.connected).toBe(false);
  });

  it("refuses a new incarnation of a peer it has seen, on both sides, and records the first", async () => {
    fixture = await PeerFixture.create(["voter1", "voter2"]);
    const seenBy1 = new InMemoryMemberIncarnations({ memberId: "voter1", incarnation: "one" });
    const voter1 = await fixture.start("voter1", { incarnations: seenBy1 });
    const first = await fixture.start("voter2", {
      incarnations: new InMemoryMemberIncarnations({ memberId: "voter2", incarnation: "two" }),
    });
    await waitFor(() => voter1.peerInfo("voter2")?.connected === true);
    expect(seenBy1.seen("voter2")).toBe("two");
    await fixture.stop(first);
    // voter2 lost its storage and bootstrapped again under its ID: a new incarnation.
    const again = new InMemoryMemberIncarnations({ memberId: "voter2", incarnation: "two-again" });
    const voter2 = await fixture.start("voter2", { incarnations: again });
    const refused = /member voter2 is incarnation two-again, but voter1 knew it as two/;
    await waitFor(() => find(fixture.log("voter1"), refused) !== undefined);
    expect(find(fixture.log("voter1"), refused)).toMatchObject({ reason: "IncarnationMismatch" });
    await waitFor(
      () => find(fixture.log("voter2"), /refused the connection \(IncarnationMismatch\)/) !== undefined,
    );
    expect(voter1.peerInfo("voter2")?.connected).toBe(false);
    expect(voter2.peerInfo("voter1")?.connected).toBe(false);
    expect(seenBy1.seen("voter2")).toBe("two");
    // A new member under the name (replace: an empty data dir, no bootstrap) is another member ID.
    await fixture.stop(voter2);
    const replaced = await fixture.start("voter2", {
      incarnations: new InMemoryMemberIncarnations({ memberId: "voter2~0a1b2c3d", incarnation: "new" }),
    });
    await waitFor(() => replaced.peerInfo("voter1")?.connected === true);
    expect(seenBy1.seen("voter2~0a1b2c3d")).toBe("new");
  });

  it("lets a node that does not know its cluster learn it from a peer that proved the secret", async () => {
    fixture = await PeerFixture.create(["voter1", "voter2"]);
    await fixture.start("voter1");
    const joining = new InMemoryClusterId(null);
    const voter2 = await fixture.start("voter2", { clusterId: joining });
    await waitFor(() => voter2.peerInfo("voter1")?.connected === true);
    expect(joining.current()).toBe(CLUSTER_ID);
    // A stranger without the secret teaches it nothing.
    const stranger = new InMemoryClusterId(null);
    const intruder = await fixture.start("voter2", {
      port: await pickFreePort("127.0.0.1"),
      secret: "not the secret",
      clusterId: stranger,
    });
    await waitFor(() => find(fixture.log("voter2"), /refused the connection \(BadProof\)/) !== undefined);
    expect(stranger.current()).toBeNull();
    expect(intruder.peerInfo("voter1")?.connected).toBe(false);
  });

  it("drops and logs a message whose `from` is not the authenticated peer", async () => {
    const t = await threeVoters();
    t.voter1!.send(heartbeat("voter3", "voter2"));
    t.voter1!.send(heartbeat("voter1", "voter2", 7));
    await waitFor(() => fixture.inbox("voter2").length === 1);
    expect(fixture.inbox("voter2")).toEqual([heartbeat("voter1", "voter2", 7)]);
    expect(t.voter2!.stats().receiveDrops).toBe(1);
    expect(find(fixture.log("voter2"), /not sent by the authenticated peer/)).toMatchObject({
      peerId: "voter1",
      from: "voter3",
    });
  });

  it("carries messages between incarnations of members by the names of their voters", async () => {
    const t = await threeVoters();
    t.voter1!.send(heartbeat("voter1~0a1b2c3d", "voter2~99aa", 4));
    t.voter1!.send(heartbeat("voter3~0a1b2c3d", "voter2", 5));
    await waitFor(() => fixture.inbox("voter2").length === 1);
    expect(fixture.inbox("voter2")).toEqual([heartbeat("voter1~0a1b2c3d", "voter2~99aa", 4)]);
    expect(t.voter2!.stats().receiveDrops).toBe(1);
  });

  it("reconnects after the remote restarts", async () => {
    fixture = await PeerFixture.create(["voter1", "voter2"]);
    const voter1 = await fixture.start("voter1");
    const first = await fixture.start("voter2");
    await allConnected({ voter1, voter2: first });
    await fixture.stop(first);
    await waitFor(() => voter1.peerInfo("voter2")?.connected === false);
    voter1.send(heartbeat("voter1", "voter2"));
    const voter2 = await fixture.start("voter2");
    await allConnected({ voter1, voter2 });
    voter1.send(heartbeat("voter1", "voter2", 2));
    voter2.send(heartbeat("voter2", "voter1", 3));
    await waitFor(() => fixture.inbox("voter2").length === 1 && fixture.inbox("voter1").length === 1);
    expect(fixture.inbox("voter2")[0]).toEqual(heartbeat("voter1", "voter2", 2));
    expect(voter1.stats().reconnects).toBeGreaterThan(0);
    expect(voter1.stats().sendDrops).toBe(1);
    expect(find(fixture.log("voter1"), /connection to peer lost/)).toMatchObject({ peerId: "voter2" });
  });

  describe("requests", () => {
    it("answers on the connection the request came in on", async () => {
      const t = await threeVoters();
      t.voter2!.handle("echo", async (from, body) => Buffer.concat([Buffer.from(`${from}:`), body]));
      const answer = await t.voter1!.request("voter2", "echo", Buffer.from("hi"), { timeoutMs: 2_000 });
      expect(Buffer.from(answer).toString()).toBe("voter1:hi");
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          t.voter3!.request("voter2", "echo", Buffer.from(String(i)), { timeoutMs: 2_000 }),
        ),
      );
      expect(answers.map((a) => Buffer.from(a).toString())).toEqual(
        Array.from({ length: 50 }, (_, i) => `voter3:${i}`),
      );
    });

    it("carries the handler's error code and message back", async () => {
      const t = await threeVoters();
      t.voter2!.handle("fail", async () => {
        throw Object.assign(new Error("leader is busy"), { code: "ResourceExhausted" });
      });
      t.voter2!.handle("crash", () => {
        throw new Error("boom");
      });
      const failed = await rejection(
        t.voter1!.request("voter2", "fail", new Uint8Array(), { timeoutMs: 2_000 }),
      );
      expect(failed).toBeInstanceOf(PeerRemoteError);
      expect(failed).toMatchObject({
        code: "PeerRemote",
        remoteCode: "ResourceExhausted",
        message: "leader is busy",
      });
      const crashed = await rejection(
        t.voter1!.request("voter2", "crash", new Uint8Array(), { timeoutMs: 2_000 }),
      );
      expect(crashed).toMatchObject({ remoteCode: "Internal", message: "boom" });
      const unknown = await rejection(
        t.voter1!.request("voter2", "nothing", new Uint8Array(), { timeoutMs: 2_000 }),
      );
      expect(unknown).toMatchObject({ remoteCode: "PeerNoHandler" });
    });

    it("is interrupted by its timeout and ignores the late answer", async () => {
      const t = await threeVoters();
      let release: () => void = () => {};
      t.voter2!.handle(
        "slow",
        () => new Promise((resolve) => (release = () => resolve(new Uint8Array([1])))),
      );
      const error = await rejection(t.voter1!.request("voter2", "slow", new Uint8Array(), { timeoutMs: 50 }));
      expect(error).toBeInstanceOf(PeerInterruptedError);
      expect(error).toMatchObject({ code: "PeerInterrupted", reason: "timeout", peerId: "voter2" });
      release();
      const framesBefore = t.voter1!.stats().framesReceived;
      await waitFor(() => t.voter1!.stats().framesReceived > framesBefore);
      expect(t.voter1!.peerInfo("voter2")?.connected).toBe(true);
    });

    it("is interrupted by an abort", async () => {
      const t = await threeVoters();
      t.voter2!.handle("never", () => new Promise(() => {}));
      const controller = new AbortController();
      const pending = t.voter1!.request("voter2", "never", new Uint8Array(), {
        timeoutMs: 5_000,
        signal: controller.signal,
      });
      controller.abort();
      expect(await rejection(pending)).toMatchObject({ code: "PeerInterrupted", reason: "aborted" });
    });

    it("is unavailable, with nothing sent, when the peer is not connected or unknown", async () => {
      fixture = await PeerFixture.create(["voter1", "voter2"]);
      const voter1 = await fixture.start("voter1");
      const framesBefore = voter1.stats().framesSent;
      const down = await rejection(voter1.request("voter2", "echo", new Uint8Array(), { timeoutMs: 1_000 }));
      expect(down).toBeInstanceOf(PeerUnavailableError);
      expect(down).toMatchObject({ code: "PeerUnavailable", peerId: "voter2" });
      const unknown = await rejection(
        voter1.request("voter7", "echo", new Uint8Array(), { timeoutMs: 1_000 }),
      );
      expect(unknown).toBeInstanceOf(PeerUnavailableError);
      expect(voter1.stats().framesSent).toBe(framesBefore);
    });

    it("is interrupted when the connection drops mid-request", async () => {
      fixture = await PeerFixture.create(["voter1", "voter2"]);
      const voter1 = await fixture.start("voter1");
      const voter2 = await fixture.start("voter2");
      await allConnected({ voter1, voter2 });
      let received = false;
      voter2.handle("hang", () => {
        received = true;
        return new Promise(() => {});
      });
      const outcome = rejection(voter1.request("voter2", "hang", new Uint8Array(), { timeoutMs: 5_000 }));
      await waitFor(() => received);
      await fixture.stop(voter2);
      expect(await outcome).toMatchObject({ code: "PeerInterrupted", reason: "disconnected" });
    });

    it("is interrupted when the transport closes", async () => {
      const t = await threeVoters();
      t.voter2!.handle("never", () => new Promise(() => {}));
      const outcome = rejection(t.voter1!.request("voter2", "never", new Uint8Array(), { timeoutMs: 5_000 }));
      await fixture.stop(t.voter1!);
      expect(await outcome).toMatchObject({ code: "PeerInterrupted", reason: "closed" });
      const after = await rejection(
        t.voter1!.request("voter2", "never", new Uint8Array(), { timeoutMs: 5_000 }),
      );
      expect(after).toBeInstanceOf(PeerUnavailableError);
    });
  });

  describe("protocol violations", () => {
    it("closes a connection that sends a frame over the limit, then recovers", async () => {
      fixture = await PeerFixture.create(["voter1", "voter2"]);
      const voter1 = await fixture.start("voter1");
      const voter2 = await fixture.start("voter2", { maxFrameBytes: 4096 });
      await allConnected({ voter1, voter2 });
      voter1.send(appendOf(1, 8192));
      await waitFor(() => voter2.stats().protocolErrors === 1);
      expect(find(fixture.log("voter2"), /peer connection closed/)?.err).toMatchObject({
        message: expect.stringMatching(/exceeds the limit of 4\d{3}/),
      });
      await waitFor(() => find(fixture.log("voter1"), /connection to peer lost/) !== undefined);
      await allConnected({ voter1, voter2 });
      voter1.send(heartbeat("voter1", "voter2"));
      await waitFor(() => fixture.inbox("voter2").length === 1);
      // Its own oversize message is dropped before sending, not sent to break the connection.
      voter2.send({ ...appendOf(1, 8192), from: "voter2", to: "voter1" });
      expect(voter2.stats().sendDrops).toBe(1);
      expect(find(fixture.log("voter2"), /cannot send a Raft message/)).toBeDefined();
    });

    it("closes a connection that does not speak the protocol, or does not finish the handshake", async () => {
      fixture = await PeerFixture.create(["voter1"]);
      // Both failures come from one address: logged both, for the test to see each.
      const voter1 = await fixture.start("voter1", { handshakeTimeoutMs: 100, strangerLogIntervalMs: 0 });
      const { port } = fixture.address("voter1");
      const closed = (socket: Socket) => new Promise<void>((resolve) => socket.on("close", () => resolve()));
      const http = connect(port, "127.0.0.1");
      cleanups.push(() => void http.destroy());
      http.on("error", () => {});
      http.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      await closed(http);
      const silent = connect(port, "127.0.0.1");
      cleanups.push(() => void silent.destroy());
      const started = Date.now();
      await closed(silent);
      expect(Date.now() - started).toBeGreaterThanOrEqual(90);
      expect(voter1.stats().protocolErrors).toBe(1);
      expect(find(fixture.log("voter1"), /handshake timed out/)).toBeDefined();
    });

    it("makes room for a source's new handshake by closing its oldest, so strangers there cannot lock a voter out", async () => {
      fixture = await PeerFixture.create(["voter1", "voter2"]);
      const voter1 = await fixture.start("voter1", { maxHandshakesPerSource: 2, handshakeTimeoutMs: 60_000 });
      const { port } = fixture.address("voter1");
      const open = () => {
        const socket = connect(port, "127.0.0.1");
        socket.on("error", () => {});
        cleanups.push(() => void socket.destroy());
        return socket;
      };
      const connected = (socket: Socket) => new Promise((resolve) => socket.on("connect", resolve));
      const silent = [open(), open()];
      await Promise.all(silent.map(connected));
      // Accepted by now (the server's accept runs within a turn or two of the connect).
      await new Promise((resolve) => setTimeout(resolve, 100));
      const started = Date.now();
      const oldestClosed = new Promise<number>((resolve) =>
        silent[0]!.on("close", () => resolve(Date.now())),
      );
      await connected(open());
      expect((await oldestClosed) - started).toBeLessThan(1_000);
      expect(voter1.stats().handshakesOverCap).toBe(1);
      // Silent strangers still hold both places of the address the voters dial from; voter2 gets through.
      const voter2 = await fixture.start("voter2");
      await allConnected({ voter1, voter2 });
    });

    it("makes room for a new handshake by closing the oldest when all are taken", async () => {
      fixture = await PeerFixture.create(["voter1", "voter2"]);
      const voter1 = await fixture.start("voter1", {
        maxHandshakes: 4,
        maxHandshakesPerSource: 2,
        handshakeTimeoutMs: 60_000,
      });
      const { port } = fixture.address("voter1");
      // Strangers from two addresses hold every place, silent, until the handshake timeout.
      const open = (localAddress: string) => {
        const socket = connect({ port, host: "127.0.0.1", localAddress });
        socket.on("error", () => {});
        cleanups.push(() => void socket.destroy());
        return socket;
      };
      const silent = ["127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"].map(open);
      await Promise.all(silent.map((socket) => new Promise((resolve) => socket.on("connect", resolve))));
      // Accepted by now (the server's accept runs within a turn or two of the connect).
      await new Promise((resolve) => setTimeout(resolve, 100));
      const oldestClosed = new Promise((resolve) => silent[0]!.on("close", resolve));
      const voter2 = await fixture.start("voter2");
      await allConnected({ voter1, voter2 });
      await oldestClosed;
      expect(voter1.stats().handshakesOverCap).toBeGreaterThanOrEqual(1);
    });

    it("never serves an impostor that answers the handshake without the secret", async () => {
      fixture = await PeerFixture.create(["voter1", "voter2"]);
      const seen: number[] = [];
      const wire: Buffer[] = [];
      const impostor: Server = createServer((socket) => {
        cleanups.unshift(() => {
          socket.destroy();
        });
        const decoder = new FrameDecoder();
        socket.on("error", () => {});
        socket.on("data", (chunk) => {
          wire.push(chunk);
          decoder.push(chunk, (type, body) => {
            seen.push(type);
            if (type === FrameType.Hello) {
              expect(decodeHello(body).acceptorId).toBe("voter2");
              const nonce = new Uint8Array(NONCE_BYTES);
              const { publicKey: ephemeralKey } = newEphemeralKey();
              socket.write(
                encodeFrame(
                  FrameType.Challenge,
                  encodeChallenge({ acceptorId: "voter2", nonce, ephemeralKey }),
                ),
              );
            } else if (type === FrameType.Proof) {
              const limits = new Map(Object.entries(LIMITS));
              const forged = encodeAnnouncement({
                clusterId: "",
                memberId: "voter9",
                incarnation: "i",
                httpUrl: "http://evil",
                wallMs: 0,
                limits,
              });
              socket.write(
                encodeFrame(FrameType.Accept, encodeCredentials(new Uint8Array(PROOF_BYTES), forged)),
              );
            }
          });
        });
      });
      cleanups.push(() => new Promise<void>((resolve) => impostor.close(() => resolve())));
      await new Promise<void>((resolve) =>
        impostor.listen(fixture.address("voter2").port, "127.0.0.1", resolve),
      );
      const voter1 = await fixture.start("voter1");
      await waitFor(() => seen.includes(FrameType.Refuse));
      voter1.send(heartbeat("voter1", "voter2"));
      await expect(
        rejection(voter1.request("voter2", "x", new Uint8Array(), { timeoutMs: 100 })),
      ).resolves.toBeInstanceOf(PeerUnavailableError);
      expect(seen).not.toContain(FrameType.Raft);
      expect(seen).not.toContain(FrameType.Request);
      expect(Buffer.concat(wire).includes(SECRET)).toBe(false);
      expect(voter1.peerInfo("voter2")).toEqual({
        connected: false,
        httpUrl: null,
        wallMs: null,
        memberId: null,
      });
      expect(find(fixture.log("voter1"), /voter2 failed to prove the cluster secret/)).toMatchObject({
        peerId: "voter2",
        reason: "BadProof",
      });
    });
  });

  describe("failed handshakes of strangers", () => {
    const failure = /^peer (handshake|connection) (refused|failed)/;
    const summary = /more failed peer handshakes/;
    const garbage = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    const sourceOf = (line: LogLine) => line.remoteAddress?.replace(/:\d+$/, "");

    /** Connects from `localAddress`, sends `bytes` and resolves once the voter has closed the connection. */
    async function strangerSends(
      port: number,
      localAddress: string,
      bytes: Uint8Array | string,
    ): Promise<void> {
      const socket = connect({ port, host: "127.0.0.1", localAddress });
      socket.on("error", () => {});
      await new Promise<void>((resolve) => {
        socket.on("close", () => resolve());
        socket.write(bytes);
      });
    }

    /** By source address: the failures with a line of their own plus those counted in a summary line. */
    function accounted(lines: readonly LogLine[]): Map<string, number> {
      const bySource = new Map<string, number>();
      const add = (source: string, n: number) => bySource.set(source, (bySource.get(source) ?? 0) + n);
      for (const line of lines) {
        if (failure.test(line.msg)) add(sourceOf(line) ?? "", 1);
        else if (summary.test(line.msg)) add(String(line.source), Number(line.suppressed));
      }
      return bySource;
    }

    it("logs them at most once per source address and interval, with a count of the rest", async () => {
      fixture = await PeerFixture.create(["voter1"]);
      const voter1 = await fixture.start("voter1", { strangerLogIntervalMs: 1_000 });
      const { port } = fixture.address("voter1");
      const refusal = encodeRefusal({ reason: "Nope", message: "n".repeat(8_000) });
      const started = performance.now();
      for (let i = 0; i < 200; i++)
        await strangerSends(port, "127.0.0.1", encodeFrame(FrameType.Refuse, refusal));
      for (let i = 0; i < 20; i++) await strangerSends(port, "127.0.0.2", garbage);
      const intervals = Math.floor((performance.now() - started) / 1_000) + 1;
      // Every failure still counts.
      await waitFor(() => voter1.stats().authFailures === 200 && voter1.stats().protocolErrors === 20);
      const logged = fixture.log("voter1").filter((l) => failure.test(l.msg));
      for (const source of ["127.0.0.1", "127.0.0.2"]) {
        const fromSource = logged.filter((l) => sourceOf(l) === source).length;
        expect(fromSource).toBeGreaterThanOrEqual(1);
        expect(fromSource).toBeLessThanOrEqual(intervals);
      }
      // Once each interval is over, its summary says how many had no line.
      await waitFor(() => {
        const counts = accounted(fixture.log("voter1"));
        return counts.get("127.0.0.1") === 200 && counts.get("127.0.0.2") === 20;
      }, 5_000);
      expect(find(fixture.log("voter1"), summary)).toMatchObject({ level: 40, source: "127.0.0.1" });
    });

    it("remembers a bounded number of source addresses, the others sharing one interval", async () => {
      fixture = await PeerFixture.create(["voter1"]);
      const voter1 = await fixture.start("voter1", {
        strangerLogIntervalMs: 60_000,
        maxStrangerLogSources: 2,
      });
      const { port } = fixture.address("voter1");
      for (const n of [2, 3, 4, 5, 6, 7]) await strangerSends(port, `127.0.0.${n}`, garbage);
      await waitFor(() => voter1.stats().protocolErrors === 6);
      const logged = fixture.log("voter1").filter((l) => failure.test(l.msg));
      // The first two addresses have a line each; of the four beyond, only the first has one.
      expect(logged.map(sourceOf)).toEqual(["127.0.0.2", "127.0.0.3", "127.0.0.4"]);
    });

    it("still logs every refusal of a configured peer that proved the secret", async () => {
      fixture = await PeerFixture.create(["voter1", "voter2"]);
      await fixture.start("voter1");
      await fixture.start("voter2", {
        canonicalLimits: { ...LIMITS, maxMutationBytes: 1024 },
        reconnectMaxMs: 100,
      });
      // voter1's own dial logs its refusal once, then "failed again": the rest are voter2's dials.
      const refused = (l: LogLine) =>
        l.reason === "LimitsMismatch" && /^peer handshake refused: canonical limits differ/.test(l.msg);
      await waitFor(() => fixture.log("voter1").filter(refused).length >= 4);
    });
  });

  it("leaves no sockets, servers or timers behind once closed", async () => {
    // A closed handle is released in the event loop's close phase, after the close callback ran.
    await new Promise((resolve) => setTimeout(resolve, 10));
    const baseline = resourceCounts();
    const t = await threeVoters();
    t.voter2!.handle("never", () => new Promise(() => {}));
    const pending = t.voter1!.request("voter2", "never", new Uint8Array(), { timeoutMs: 60_000 });
    pending.catch(() => {});
    await fixture.closeAll();
    // Closed while it is still binding its port.
    const early = fixture.transport("voter1");
    const starting = early.start();
    await early.close();
    await starting;
    await new Promise((resolve) => setTimeout(resolve, 10));
    const after = resourceCounts();
    for (const [resource, count] of Object.entries(baseline))
      expect(after[resource]).toBeLessThanOrEqual(count);
  });
});

function resourceCounts(): Record<string, number> {
  const counts: Record<string, number> = { TCPSocketWrap: 0, TCPServerWrap: 0, Timeout: 0 };
  for (const resource of process.getActiveResourcesInfo()) {
    if (resource in counts) counts[resource]!++;
  }
  return counts;
}
