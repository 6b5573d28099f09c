import { connect, createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { Message } from "../raft/types.js";
import { encodeFrame, FrameDecoder } from "./frame-codec.js";
import { SEALED_RECORD_TYPE } from "./frame-seal.js";
import { FrameType } from "./peer-frames.js";
import type { PeerTransport } from "./peer-transport.js";
import { encodeRaftMessage } from "./raft-message-codec.js";
import { listenOnFreePort, PeerFixture, waitFor } from "./test-fixtures/peer-fixture.js";

/** What the path between voter1 and voter2 does to the frames voter1 sends after the handshake. */
type Tamper = "none" | "flip" | "inject" | "replay" | "drop" | "announcement";

const MARKER = Buffer.from("a value only the voters may read");

function appendWith(data: Uint8Array, index = 1001): Message {
  return {
    type: "append",
    from: "voter1",
    to: "voter2",
    term: 7,
    index: index - 1,
    logTerm: 7,
    entries: [{ term: 7, index, type: "normal", data }],
    commit: 990,
    epoch: 2,
  };
}

/**
 * A man in the middle on voter1's connection to voter2: relays both ways, records what it sees, and
 * changes the first sealed record (the first frames after the handshake) as told.
 */
class PathBetween {
  readonly seen: Buffer[] = [];
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  constructor(
    private readonly tamper: Tamper,
    private readonly targetPort: number,
  ) {}

  /** Listens on a port of the system's choosing, returned: one reserved first could be taken meanwhile. */
  async listen(): Promise<number> {
    const server = createServer((inbound) => this.relay(inbound));
    this.server = server;
    return listenOnFreePort(server);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private relay(inbound: Socket): void {
    const outbound = connect(this.targetPort, "127.0.0.1");
    for (const socket of [inbound, outbound]) {
      this.sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => {
        inbound.destroy();
        outbound.destroy();
      });
    }
    outbound.on("data", (chunk: Buffer) => inbound.write(chunk));
    const decoder = new FrameDecoder();
    let tampered = false;
    inbound.on("data", (chunk: Buffer) => {
      this.seen.push(Buffer.from(chunk));
      decoder.push(chunk, (type, body) => {
        const frame = Buffer.from(encodeFrame(type, body));
        if (type === FrameType.Proof && this.tamper === "announcement") {
          // Points the dialer's announced HTTP URL elsewhere (leader hints would send clients there).
          frame[frame.indexOf("http://") + 7]! ^= 0x01;
        }
        if (type !== SEALED_RECORD_TYPE || tampered) {
          outbound.write(frame);
          return;
        }
        tampered = true;
        switch (this.tamper) {
          case "none":
            outbound.write(frame);
            return;
          case "flip":
            frame[frame.length - 40]! ^= 0x01;
            outbound.write(frame);
            return;
          case "inject":
            // A well-formed frame the path made up, ahead of the real one.
            outbound.write(encodeFrame(FrameType.Raft, encodeRaftMessage(appendWith(Buffer.from("forged")))));
            outbound.write(frame);
            return;
          case "replay":
            outbound.write(frame);
            outbound.write(frame);
            return;
          case "drop":
          case "announcement":
            return;
        }
      });
    });
  }
}

describe("sealed peer frames", () => {
  let fixture: PeerFixture;
  let path: PathBetween | null = null;

  afterEach(async () => {
    await fixture?.closeAll();
    await path?.close();
    path = null;
  });

  /** voter1 reaches voter2 only through the path; voter2 reaches voter1 directly. */
  async function throughPath(
    tamper: Tamper,
    connected = true,
  ): Promise<{ voter1: PeerTransport; voter2: PeerTransport }> {
    fixture = await PeerFixture.create(["voter1", "voter2"]);
    path = new PathBetween(tamper, fixture.address("voter2").port);
    const pathPort = await path.listen();
    const voters = fixture.voters.map((v) => (v.id === "voter2" ? { ...v, port: pathPort } : v));
    const voter2 = await fixture.start("voter2");
    const voter1 = await fixture.start("voter1", { voters });
    if (connected) await waitFor(() => voter1.peerInfo("voter2")?.connected === true);
    return { voter1, voter2 };
  }

  it("carries frames through an honest path, unreadable on it", async () => {
    const { voter1 } = await throughPath("none");
    voter1.send(appendWith(MARKER));
    await waitFor(() => fixture.inbox("voter2").length === 1);
    const delivered = fixture.inbox("voter2")[0]!;
    expect(delivered.type === "append" && Buffer.from(delivered.entries[0]!.data)).toEqual(MARKER);
    expect(Buffer.concat(path!.seen).includes(MARKER)).toBe(false);
  });

  it.each([
    ["an altered frame", "flip"],
    ["a frame the path made up", "inject"],
    ["a replayed frame", "replay"],
    ["a frame after a dropped one", "drop"],
  ] as const)("refuses %s and closes the connection", async (_name, tamper) => {
    const { voter1, voter2 } = await throughPath(tamper);
    voter1.send(appendWith(MARKER));
    // Frames sent in one turn share a record: the next one goes in a record of its own.
    if (tamper === "drop") setTimeout(() => voter1.send(appendWith(MARKER, 1002)), 20);
    await waitFor(() => voter2.stats().unauthenticFrames === 1);
    const delivered = fixture.inbox("voter2");
    // Only a frame that came through untouched, in order, may have been delivered.
    const expected = tamper === "replay" ? 1 : 0;
    expect(delivered).toHaveLength(expected);
    for (const message of delivered) {
      expect(message.type === "append" && Buffer.from(message.entries[0]!.data)).toEqual(MARKER);
    }
    const closed = fixture.log("voter2").find((line) => /peer connection closed/.test(line.msg));
    expect(closed?.err).toMatchObject({
      message: expect.stringMatching(/failed its authentication|unsealed frame of type 16/),
    });
  });

  it("refuses a handshake whose announcement was altered on the path", async () => {
    const { voter1, voter2 } = await throughPath("announcement", false);
    await waitFor(() => voter2.stats().authFailures >= 1);
    const refused = fixture.log("voter2").find((line) => /handshake refused/.test(line.msg));
    expect(refused).toMatchObject({ peerId: "voter1", reason: "BadProof" });
    expect(voter1.peerInfo("voter2")?.connected).toBe(false);
  });
});
