import type { Socket } from "node:net";
import { encodeFrame, encodeFrameHeader, FRAME_HEADER_BYTES, FrameDecoder } from "./frame-codec.js";
import { FrameOpener } from "./frame-opener.js";
import { SEAL_TAG_BYTES, SEALED_RECORD_BYTES, SEALED_RECORD_TYPE } from "./frame-seal.js";
import { FrameSealer } from "./frame-sealer.js";
import { PeerConnectionClosedError, PeerProtocolError } from "./peer-errors.js";
import type { PeerStats } from "./peer-stats.js";

export interface Frame {
  readonly type: number;
  readonly body: Uint8Array;
}

/** Handshake frames are tiny: an unauthenticated peer may not make this node buffer more. */
const HANDSHAKE_MAX_FRAME_BYTES = 64 * 1024;
/** Sealed frames that may arrive between `seal()` and `open()` (none do: both run in one turn). */
const MAX_EARLY_FRAMES = 4;
/** Lets the kernel notice a peer that vanished without closing (power loss, partition). */
const KEEPALIVE_DELAY_MS = 5_000;

export interface PeerConnectionOptions {
  /** `host:port` of the other end, for logs. */
  readonly remoteAddress: string;
  /** The largest frame sent or, once open, received. */
  readonly maxFrameBytes: number;
  /** Sends fail (return false) while more than this many bytes wait in the socket's write buffer. */
  readonly highWaterMarkBytes: number;
  readonly stats: PeerStats;
  /** Called once, with the reason, when the connection ends for whatever cause. */
  readonly onClose: (error: Error) => void;
}

/** The keys of one side of a connection: what it sends, and what it receives. */
export interface ConnectionKeys {
  readonly send: Uint8Array;
  readonly receive: Uint8Array;
}

/**
 * One framed TCP connection to a peer. During the handshake frames are pulled with `receive()`; once
 * the handshake has succeeded, `open()` switches to pushing each frame to a handler. From the moment the
 * handshake calls `seal()`, frames either way travel in sealed records (frame-seal.ts). Any invalid
 * frame or record, and any error a handler throws, closes the connection: a peer that breaks the
 * protocol once is not trusted with the rest of the stream.
 *
 * Neither side of the handshake ever sends ahead of the other, so until the keys are in place the only
 * frame that may arrive is the one a handshake step waits for. Any other is refused: one appended on
 * the path to the other side's last handshake frame would otherwise be handed on, after the handshake,
 * as if the authenticated peer had sent it.
 */
export class PeerConnection {
  readonly remoteAddress: string;
  private readonly decoder = new FrameDecoder(HANDSHAKE_MAX_FRAME_BYTES);
  private readonly early: Frame[] = [];
  private waiter: { resolve(frame: Frame): void; reject(error: Error): void } | null = null;
  private handler: ((frame: Frame) => void) | null = null;
  private error: Error | null = null;
  private sealer: FrameSealer | null = null;
  private opener: FrameOpener | null = null;
  /** The frames inside the records received, once opened. */
  private readonly unsealed: FrameDecoder;
  /** Frames queued for the next record, their bytes, and the `written` callbacks of its frames. */
  private record: Uint8Array[] = [];
  private recordBytes = 0;
  private recordWritten: (() => void)[] = [];

  constructor(
    private readonly socket: Socket,
    private readonly options: PeerConnectionOptions,
  ) {
    this.remoteAddress = options.remoteAddress;
    this.unsealed = new FrameDecoder(options.maxFrameBytes);
    socket.setNoDelay(true);
    socket.setKeepAlive(true, KEEPALIVE_DELAY_MS);
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("error", (error) => this.close(error));
    socket.on("close", () => this.close(new PeerConnectionClosedError("the connection was closed")));
  }

  get closed(): boolean {
    return this.error !== null;
  }

  /** The next frame, during the handshake. Rejects with the reason once the connection is closed. */
  receive(): Promise<Frame> {
    if (this.error) return Promise.reject(this.error);
    const frame = this.early.shift();
    if (frame) return Promise.resolve(frame);
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /**
   * Seals every frame sent from now on and opens every frame received from now on. The handshake calls
   * it at the one point both sides agree on: the acceptor right after sending Accept, the dialer right
   * after reading it, before either sends or reads another frame.
   */
  seal(keys: ConnectionKeys): void {
    // Closed meanwhile (an invalid frame in the chunk that held the last handshake frame, say): the
    // handshake must fail rather than hand its caller a dead connection.
    if (this.error) throw this.error;
    // Unreachable while `accept` refuses unkeyed frames no one waits for; kept as the last guard.
    if (this.early.length > 0) {
      const error = new PeerProtocolError(`${this.early.length} frames arrived before the keys to seal them`);
      this.close(error);
      throw error;
    }
    this.sealer = new FrameSealer(keys.send);
    this.opener = new FrameOpener(keys.receive);
  }

  get sealed(): boolean {
    return this.sealer !== null;
  }

  /** The handshake is over: deliver every frame, up to the full frame size, to `handler`. */
  open(handler: (frame: Frame) => void): void {
    // A record holds frames up to SEALED_RECORD_BYTES, and more when one frame alone is larger.
    this.decoder.maxFrameBytes = this.opener
      ? SEALED_RECORD_BYTES + FRAME_HEADER_BYTES + this.options.maxFrameBytes + SEAL_TAG_BYTES
      : this.options.maxFrameBytes;
    this.handler = handler;
    while (!this.error) {
      const frame = this.early.shift();
      if (!frame) break;
      this.dispatch(frame);
    }
  }

  /** Whether the socket is corked until the end of this turn of the event loop (see send). */
  private corked = false;
  private readonly uncork = (): void => {
    this.sealRecord();
    if (!this.corked) return;
    this.corked = false;
    this.socket.uncork();
  };

  /**
   * Queues a frame; false when the connection is closed or its write buffer is over the high-water
   * mark (nothing was queued). A frame over the size limit is the caller's bug and throws. `written`,
   * for a frame queued, is called once the socket is done with its bytes (or failed).
   */
  send(type: number, body: Uint8Array | readonly Uint8Array[], written?: () => void): boolean {
    if (this.error) return false;
    const length = body instanceof Uint8Array ? body.length : body.reduce((n, part) => n + part.length, 0);
    if (length > this.options.maxFrameBytes) {
      throw new PeerProtocolError(
        `a frame of ${length} bytes exceeds the limit of ${this.options.maxFrameBytes}`,
      );
    }
    if (this.socket.writableLength + this.recordBytes > this.options.highWaterMarkBytes) return false;
    // Frames queued in one turn of the event loop (a Ready's messages) leave in one write, at the end
    // of that turn unless flushed sooner: after the client answers the same turn produced, so that a
    // leader's commit notices (two socket writes) do not hold up the answers.
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      setImmediate(this.uncork);
    }
    const done = written === undefined ? undefined : () => written();
    if (this.sealer) {
      this.record.push(encodeFrameHeader(type, length));
      if (body instanceof Uint8Array) this.record.push(body);
      else for (const part of body) this.record.push(part);
      this.recordBytes += FRAME_HEADER_BYTES + length;
      if (done) this.recordWritten.push(done);
      if (this.recordBytes >= SEALED_RECORD_BYTES) this.sealRecord();
    } else if (body instanceof Uint8Array) {
      this.socket.write(encodeFrame(type, body), done);
    } else {
      // A body in parts (a snapshot chunk's bytes apart from its fields) is written as it is, not
      // copied into one frame: the corked socket hands the parts to one writev.
      this.socket.write(encodeFrameHeader(type, length));
      for (let i = 0; i < body.length; i++)
        this.socket.write(body[i]!, i === body.length - 1 ? done : undefined);
    }
    this.options.stats.framesSent++;
    this.options.stats.bytesSent += FRAME_HEADER_BYTES + length;
    return true;
  }

  /** Writes the frames queued in this turn now. */
  flush(): void {
    this.uncork();
  }

  /** Seals the frames queued for the record and writes it. */
  private sealRecord(): void {
    if (this.recordBytes === 0 || this.sealer === null) return;
    const parts = this.sealer.seal(SEALED_RECORD_TYPE, this.record, this.recordBytes);
    const written = this.recordWritten;
    const done = written.length === 0 ? undefined : () => runAll(written);
    this.record = [];
    this.recordBytes = 0;
    this.recordWritten = [];
    for (let i = 0; i < parts.length; i++)
      this.socket.write(parts[i]!, i === parts.length - 1 ? done : undefined);
    this.options.stats.bytesSent += FRAME_HEADER_BYTES + SEAL_TAG_BYTES;
  }

  /** Sends a last frame (a refusal) and closes once it is flushed, so the other side can read why. */
  sendAndClose(type: number, body: Uint8Array, reason: Error): void {
    if (this.error) return;
    this.send(type, body);
    this.sealRecord();
    this.finish(reason);
    this.socket.end(() => this.socket.destroy());
  }

  close(reason: Error): void {
    if (this.error) return;
    this.finish(reason);
    this.socket.destroy();
  }

  private finish(reason: Error): void {
    this.error = reason;
    // Frames that will never be sealed are done with: whoever lent their bytes may have them back.
    const unsent = this.recordWritten;
    this.record = [];
    this.recordBytes = 0;
    this.recordWritten = [];
    runAll(unsent);
    if (reason instanceof PeerProtocolError) this.options.stats.protocolErrors++;
    this.early.length = 0;
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.reject(reason);
    this.options.onClose(reason);
  }

  private onData(chunk: Buffer): void {
    if (this.error) return;
    this.options.stats.bytesReceived += chunk.length;
    try {
      this.decoder.push(chunk, this.deliver);
    } catch (error) {
      this.close(error instanceof Error ? error : new PeerProtocolError(String(error)));
    }
  }

  private readonly deliver = (type: number, body: Uint8Array): void => {
    if (this.error) return;
    if (this.opener === null) {
      this.accept(type, body);
      return;
    }
    let record: Uint8Array;
    try {
      if (type !== SEALED_RECORD_TYPE) {
        throw new PeerProtocolError(`an unsealed frame of type ${type} after the handshake`);
      }
      record = this.opener.open(type, body);
    } catch (error) {
      this.options.stats.unauthenticFrames++;
      throw error;
    }
    this.unsealed.push(record, this.accept);
  };

  private readonly accept = (type: number, body: Uint8Array): void => {
    if (this.error) return;
    this.options.stats.framesReceived++;
    const frame: Frame = { type, body };
    if (this.handler) {
      this.dispatch(frame);
    } else if (this.waiter) {
      const waiter = this.waiter;
      this.waiter = null;
      waiter.resolve(frame);
    } else if (this.opener === null) {
      // Unsealed and out of turn: the peer never sent it, or broke the protocol (see the class comment).
      this.options.stats.unauthenticFrames++;
      throw new PeerProtocolError(`an unsealed frame of type ${type} that the handshake did not ask for`);
    } else if (this.early.length < MAX_EARLY_FRAMES) {
      this.early.push(frame);
    } else {
      throw new PeerProtocolError("too many sealed frames before the connection was opened");
    }
  };

  private dispatch(frame: Frame): void {
    try {
      this.handler!(frame);
    } catch (error) {
      this.close(error instanceof Error ? error : new PeerProtocolError(String(error)));
    }
  }
}

function runAll(callbacks: readonly (() => void)[]): void {
  for (const callback of callbacks) callback();
}
