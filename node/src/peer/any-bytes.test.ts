import { connect, type Socket } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeFrame, encodeFrameHeader } from "./frame-codec.js";
import { encodeHello, FrameType, NONCE_BYTES } from "./peer-frames.js";
import type { PeerTransport } from "./peer-transport.js";
import { EPHEMERAL_KEY_BYTES } from "./session-keys.js";
import { allConnected, heartbeat, PeerFixture, waitFor } from "./test-fixtures/peer-fixture.js";

/**
 * Anyone can reach a voter's peer port. Whatever a stranger sends there (bytes, frames of any type and
 * body, a Hello naming any voter, truthful or not, then anything), the voter closes the connection
 * within its handshake timeout, keeps running, and keeps its real peers' links working.
 */

const HANDSHAKE_TIMEOUT_MS = 100;

const bytes = (maxLength: number) => fc.uint8Array({ maxLength });
const fixedBytes = (length: number) => fc.uint8Array({ minLength: length, maxLength: length });
const frameType = fc.oneof(fc.constantFrom(...Object.values(FrameType)), fc.integer({ min: 0, max: 255 }));
const hello = fc
  .record({
    dialerId: fc.oneof(fc.constantFrom("voter2", "voter1", "voter9", ""), fc.string({ maxLength: 80 })),
    acceptorId: fc.oneof(fc.constantFrom("voter1", "voter2", ""), fc.string({ maxLength: 80 })),
    nonce: fc.oneof(fixedBytes(NONCE_BYTES), fixedBytes(0), fixedBytes(NONCE_BYTES - 1)),
    ephemeralKey: fc.oneof(fixedBytes(EPHEMERAL_KEY_BYTES), fixedBytes(EPHEMERAL_KEY_BYTES + 1)),
  })
  .map((fields) => encodeFrame(FrameType.Hello, encodeHello(fields)));
const chunk = fc.oneof(
  bytes(64),
  fc.tuple(frameType, bytes(256)).map(([type, body]) => encodeFrame(type, body)),
  hello,
  // A header that promises more than will ever come, or more than any frame may carry.
  fc
    .tuple(frameType, fc.constantFrom(10, 1_000_000, 0xffffffff))
    .map(([type, length]) => encodeFrameHeader(type, length)),
);

let fixture: PeerFixture;
let voter1: PeerTransport;
let voter2: PeerTransport;

beforeAll(async () => {
  fixture = await PeerFixture.create(["voter1", "voter2"]);
  voter1 = await fixture.start("voter1", { handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS });
  voter2 = await fixture.start("voter2");
  await allConnected({ voter1, voter2 });
});

afterAll(() => fixture?.closeAll());

/** Sends `chunks` to voter1's peer port and resolves once voter1 has closed the connection. */
async function strangerSends(chunks: readonly Uint8Array[]): Promise<void> {
  const { port } = fixture.address("voter1");
  const socket: Socket = connect(port, "127.0.0.1");
  socket.on("error", () => {});
  socket.on("data", () => {});
  const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  await new Promise<void>((resolve) => socket.on("connect", () => resolve()));
  for (const c of chunks) if (!socket.destroyed) socket.write(c);
  const timer = setTimeout(
    () => socket.destroy(new Error("the voter kept a stranger's connection open")),
    2_000,
  );
  try {
    await closed;
    expect(socket.errored?.message).not.toBe("the voter kept a stranger's connection open");
  } finally {
    clearTimeout(timer);
  }
}

describe("a stranger on the peer port", () => {
  it("is closed out whatever it sends, and the voters' own links keep working", async () => {
    await fc.assert(fc.asyncProperty(fc.array(chunk, { minLength: 1, maxLength: 5 }), strangerSends), {
      numRuns: 120,
      seed: 20261206,
      endOnFailure: true,
    });
    const before = fixture.inbox("voter2").length;
    voter1.send(heartbeat("voter1", "voter2"));
    voter2.send(heartbeat("voter2", "voter1", 2));
    await waitFor(
      () =>
        fixture.inbox("voter2").length > before &&
        fixture.inbox("voter1").some((m) => m.type === "heartbeat" && m.commit === 2),
    );
    expect(voter1.peerInfo("voter2")?.connected).toBe(true);
    const strangers = voter1.peerStats().get("");
    expect((strangers?.protocolErrors ?? 0) + (strangers?.authFailures ?? 0)).toBeGreaterThan(0);
  }, 120_000);
});
