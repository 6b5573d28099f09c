import { connect, type Socket } from "node:net";
import type { Logger } from "pino";
import type { PeerAddress } from "./peer-address.js";
import { type Frame, PeerConnection } from "./peer-connection.js";
import {
  PeerConnectionClosedError,
  PeerHandshakeError,
  PeerInterruptedError,
  type PeerInterruption,
  PeerProtocolError,
  PeerRemoteError,
  PeerUnavailableError,
} from "./peer-errors.js";
import { decodeFailure, decodeResponse, encodeRequest, FrameType } from "./peer-frames.js";
import { dialHandshake, type HandshakeIdentity, type HandshakeResult } from "./peer-handshake.js";
import type { PeerStats } from "./peer-stats.js";

export interface PeerLinkSettings {
  readonly identity: HandshakeIdentity;
  readonly stats: PeerStats;
  readonly logger: Logger;
  readonly maxFrameBytes: number;
  readonly highWaterMarkBytes: number;
  readonly handshakeTimeoutMs: number;
  readonly reconnectInitialMs: number;
  readonly reconnectMaxMs: number;
  /** Every socket is registered so the transport can destroy what is left when it closes. */
  readonly track: (socket: Socket) => void;
}

export interface RequestOptions {
  /** How long to wait for the answer once the request is sent. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

interface PendingRequest {
  readonly resolve: (body: Uint8Array) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * This node's one outbound connection to one peer: dials, authenticates, and redials with jittered
 * exponential backoff after any failure, until closed. Raft messages and requests to the peer go out
 * on it, and answers to those requests come back on it.
 */
export class PeerLink {
  /** The public HTTP URL the peer last announced, in either direction; kept while disconnected. */
  httpUrl: string | null = null;
  /**
   * The member ID of the process this link reached at the peer's configured address, as its last
   * handshake proved; null before the first.
   */
  dialedMemberId: string | null = null;
  /** The peer's last announced wall clock, and this process's monotonic clock when it arrived. */
  private wall: { readonly wallMs: number; readonly receivedAt: number } | null = null;
  private connection: PeerConnection | null = null;
  private dialing: PeerConnection | null = null;
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;
  /** The last failure logged at warning level; repeats of it are logged at debug level only. */
  private lastFailure: string | null = null;
  private nextRequestId = 1;
  private readonly pending = new Map<number, PendingRequest>();
  private stopped = false;
  private readonly log: Logger;

  constructor(
    readonly peer: PeerAddress,
    private readonly settings: PeerLinkSettings,
  ) {
    this.log = settings.logger.child({ peerId: peer.id, remoteAddress: `${peer.host}:${peer.port}` });
  }

  /** What the peer announced in a handshake, in either direction. */
  announced(result: HandshakeResult): void {
    this.httpUrl = result.httpUrl;
    this.wall = { wallMs: result.wallMs, receivedAt: performance.now() };
  }

  /**
   * The peer's wall clock now, as its last announcement tells: what it announced plus the time since on
   * this node's monotonic clock. Short by the announcement's transit, so never ahead of the peer's own
   * reading; null before any handshake.
   */
  peerWallMs(): number | null {
    if (this.wall === null) return null;
    return Math.floor(this.wall.wallMs + (performance.now() - this.wall.receivedAt));
  }

  get connected(): boolean {
    return this.connection !== null;
  }

  start(): void {
    this.dial();
  }

  /** Queues a frame to the peer; false when not connected or its write buffer is full. */
  send(type: number, body: Uint8Array | readonly Uint8Array[], written?: () => void): boolean {
    return this.connection?.send(type, body, written) ?? false;
  }

  flush(): void {
    this.connection?.flush();
  }

  request(channel: string, body: Uint8Array, options: RequestOptions): Promise<Uint8Array> {
    const connection = this.connection;
    if (!connection) return Promise.reject(new PeerUnavailableError(this.peer.id, "not connected"));
    if (options.signal?.aborted) return Promise.reject(new PeerInterruptedError(this.peer.id, "aborted"));
    const id = this.nextRequestId++;
    let sent: boolean;
    try {
      sent = connection.send(FrameType.Request, encodeRequest({ id, channel, body }));
    } catch (error) {
      return Promise.reject(error);
    }
    if (!sent) return Promise.reject(new PeerUnavailableError(this.peer.id, "its write buffer is full"));
    return new Promise((resolve, reject) => {
      const signal = options.signal;
      const onAbort = () => this.interrupt(id, "aborted");
      const timer = setTimeout(() => this.interrupt(id, "timeout"), options.timeoutMs);
      this.pending.set(id, { resolve, reject, timer, signal, onAbort });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Stops dialing and closes the connection; pending requests are interrupted. */
  close(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.interruptAll("closed");
    const closing = new PeerConnectionClosedError("the transport is closing");
    this.dialing?.close(closing);
    this.connection?.close(closing);
  }

  private dial(): void {
    this.timer = null;
    if (this.stopped) return;
    const { host, port, id: peerId } = this.peer;
    const socket = connect({ host, port });
    this.settings.track(socket);
    const connection = new PeerConnection(socket, {
      remoteAddress: `${host}:${port}`,
      maxFrameBytes: this.settings.maxFrameBytes,
      highWaterMarkBytes: this.settings.highWaterMarkBytes,
      stats: this.settings.stats,
      onClose: (reason) => this.onClose(connection, reason),
    });
    this.dialing = connection;
    const timeout = setTimeout(
      () => connection.close(new PeerHandshakeError("Timeout", peerId, "the handshake timed out")),
      this.settings.handshakeTimeoutMs,
    );
    const failed = (error: unknown): void => {
      clearTimeout(timeout);
      this.dialing = null;
      const reason = error instanceof Error ? error : new PeerProtocolError(String(error));
      connection.close(reason);
      if (this.stopped) return;
      this.logFailure(reason);
      this.retry();
    };
    dialHandshake(connection, this.settings.identity, peerId).then((result) => {
      // Closed meanwhile: by close(), or as the handshake ended, which onClose ignores for the
      // connection being dialed. Adopting it would leave the link up on a dead connection, dropping
      // every send and never redialing: a failed dial instead.
      if (this.stopped || connection.closed) {
        failed(
          new PeerHandshakeError("Disconnected", peerId, "the connection closed as the handshake ended"),
        );
        return;
      }
      clearTimeout(timeout);
      this.dialing = null;
      this.connection = connection;
      this.dialedMemberId = result.memberId;
      this.announced(result);
      this.failures = 0;
      this.lastFailure = null;
      connection.open((frame) => this.onFrame(frame));
      this.log.info("connected to peer");
    }, failed);
  }

  private onClose(connection: PeerConnection, reason: Error): void {
    // While dialing, the handshake reports the failure (it always settles once the connection closes).
    if (connection !== this.connection) return;
    this.connection = null;
    this.interruptAll("disconnected");
    if (this.stopped) return;
    this.log.warn({ err: reason }, "connection to peer lost");
    this.retry();
  }

  private retry(): void {
    if (this.stopped) return;
    // Equal jitter: at least half the backoff, so peers that failed together do not redial together.
    const backoff = Math.min(
      this.settings.reconnectMaxMs,
      this.settings.reconnectInitialMs * 2 ** this.failures,
    );
    this.failures = Math.min(this.failures + 1, 30);
    this.settings.stats.reconnects++;
    this.timer = setTimeout(() => this.dial(), backoff / 2 + (Math.random() * backoff) / 2);
  }

  private logFailure(reason: Error): void {
    const refused =
      reason instanceof PeerHandshakeError && reason.reason !== "Timeout" && reason.reason !== "Disconnected";
    if (refused) this.settings.stats.authFailures++;
    // A peer that is down or misconfigured fails the same way on every redial: say so once, not every
    // two seconds.
    const key = `${reason.name}:${reason.message}`;
    const fields = { err: reason, reason: reason instanceof PeerHandshakeError ? reason.reason : undefined };
    if (key === this.lastFailure) this.log.debug(fields, "connecting to peer failed again");
    else if (refused) this.log.error(fields, `peer handshake refused: ${reason.message}`);
    else this.log.warn(fields, `connecting to peer failed: ${reason.message}`);
    this.lastFailure = key;
  }

  private onFrame(frame: Frame): void {
    if (frame.type === FrameType.Response) {
      const response = decodeResponse(frame.body);
      this.settle(response.id)?.resolve(response.body);
    } else if (frame.type === FrameType.Failure) {
      const failure = decodeFailure(frame.body);
      this.settle(failure.id)?.reject(new PeerRemoteError(this.peer.id, failure.code, failure.message));
    } else {
      // Only the acceptor's answers travel this way; anything else means the peer is confused.
      throw new PeerProtocolError(`unexpected frame type ${frame.type} on an outbound connection`);
    }
  }

  /** Removes a pending request and its timer; undefined if it already ended (a late answer). */
  private settle(id: number): PendingRequest | undefined {
    const request = this.pending.get(id);
    if (!request) return undefined;
    this.pending.delete(id);
    clearTimeout(request.timer);
    request.signal?.removeEventListener("abort", request.onAbort);
    return request;
  }

  private interrupt(id: number, reason: PeerInterruption): void {
    this.settle(id)?.reject(new PeerInterruptedError(this.peer.id, reason));
  }

  private interruptAll(reason: PeerInterruption): void {
    for (const id of [...this.pending.keys()]) this.interrupt(id, reason);
  }
}
