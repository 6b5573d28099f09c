import { connect, createServer, type Server, type Socket } from "node:net";
import type { Message } from "../../raft/types.js";
import { encodeFrame, encodeFrameHeader, FrameDecoder } from "../frame-codec.js";
import { SEALED_RECORD_TYPE } from "../frame-seal.js";
import { encodeRequest, encodeResponse, FrameType } from "../peer-frames.js";
import { encodeRaftMessage } from "../raft-message-codec.js";
import { listenOnFreePort } from "./peer-fixture.js";

/**
 * What the path between voter1 (the dialer) and voter2 does. The first modes change the first sealed
 * record voter1 sends on each connection; the `after-` modes, on the first connection only, append
 * frames to the last handshake frame of one side, in the same write (so the same TCP segment).
 */
export type Tamper =
  | "none"
  | "flip"
  | "inject"
  | "replay"
  | "drop"
  | "announcement"
  /** Unsealed Raft and `forward` Request frames after voter1's Proof. */
  | "after-proof"
  /** An unsealed Response frame after voter2's Accept. */
  | "after-accept"
  /** After voter2's Accept, the header of a frame larger than a handshake frame may be. */
  | "oversize-after-accept";

/** A request the path makes up: it would run a command on the leader if served. */
export const FORGED_REQUEST = { id: 1, channel: "forward", body: Buffer.from("admin.createKey forged") };

export function appendWith(data: Uint8Array, index = 1001): Message {
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
 * A man in the middle on voter1's connection to voter2: relays both ways, records what voter1 sends,
 * and tampers as told.
 */
export class PathBetween {
  readonly seen: Buffer[] = [];
  /** Connections relayed so far. */
  connections = 0;
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
    const first = this.connections++ === 0;
    const outbound = connect(this.targetPort, "127.0.0.1");
    for (const socket of [inbound, outbound]) {
      this.sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => {
        inbound.destroy();
        outbound.destroy();
      });
    }
    const afterAccept = first ? this.afterAccept() : [];
    if (afterAccept.length === 0) {
      outbound.on("data", (chunk: Buffer) => inbound.write(chunk));
    } else {
      const fromAcceptor = new FrameDecoder();
      outbound.on("data", (chunk: Buffer) =>
        fromAcceptor.push(chunk, (type, body) => {
          const frame = encodeFrame(type, body);
          inbound.write(type === FrameType.Accept ? Buffer.concat([frame, ...afterAccept]) : frame);
        }),
      );
    }
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
        if (type === FrameType.Proof && this.tamper === "after-proof" && first) {
          const forged = encodeRaftMessage(appendWith(Buffer.from("forged")));
          outbound.write(
            Buffer.concat([
              frame,
              encodeFrame(FrameType.Raft, forged),
              encodeFrame(FrameType.Request, encodeRequest(FORGED_REQUEST)),
            ]),
          );
          return;
        }
        if (type !== SEALED_RECORD_TYPE || tampered) {
          outbound.write(frame);
          return;
        }
        tampered = true;
        switch (this.tamper) {
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
          default:
            outbound.write(frame);
        }
      });
    });
  }

  /** What to append to the acceptor's Accept on this connection. */
  private afterAccept(): Uint8Array[] {
    switch (this.tamper) {
      case "after-accept":
        return [encodeFrame(FrameType.Response, encodeResponse({ id: 1, body: Buffer.from("forged") }))];
      case "oversize-after-accept":
        // Only a header: the receiver refuses it as soon as it reads the length.
        return [encodeFrameHeader(FrameType.Refuse, 64 * 1024 + 1)];
      default:
        return [];
    }
  }
}
