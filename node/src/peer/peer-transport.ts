import { createSecretKey } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import type { Logger } from "pino";
import type { Message } from "../raft/types.js";
import type { ClusterId } from "./cluster-id.js";
import { DEFAULT_MAX_FRAME_BYTES } from "./frame-codec.js";
import type { MemberIncarnations } from "./member-incarnations.js";
import { memberName } from "./member-name.js";
import type { PeerAddress } from "./peer-address.js";
import { type Frame, PeerConnection } from "./peer-connection.js";
import {
  PeerConnectionClosedError,
  PeerError,
  PeerHandshakeError,
  PeerProtocolError,
  PeerUnavailableError,
} from "./peer-errors.js";
import { decodeRequest, encodeFailure, encodeResponse, FrameType, type Request } from "./peer-frames.js";
import { acceptHandshake, type HandshakeIdentity, refusalError } from "./peer-handshake.js";
import { PeerLink, type RequestOptions } from "./peer-link.js";
import { emptyPeerStats, type PeerStats } from "./peer-stats.js";
import { decodeRaftMessage, encodeRaftMessageParts } from "./raft-message-codec.js";
import { OTHER_SOURCES, StrangerLog } from "./stranger-log.js";

export interface PeerTransportOptions {
  readonly nodeId: string;
  /** Where to listen for peers: `Node.PeerHost` and `Node.PeerPort`. */
  readonly host: string;
  readonly port: number;
  /** `Cluster.Voters`; this node's own entry is skipped. Only these ids are accepted as peers. */
  readonly voters: readonly PeerAddress[];
  readonly secret: string;
  /** This node's public HTTP URL, announced to peers so they can hint clients to the leader. */
  readonly httpUrl: string;
  /** The wall clock announced to peers (PeerInfo.wallMs); Date.now by default. */
  readonly wallMs?: () => number;
  /** Compared in the handshake: a peer whose canonical limits differ is refused. */
  readonly canonicalLimits: Readonly<Record<string, number>>;
  /** Compared in the handshake: a peer of another cluster is refused. */
  readonly clusterId: ClusterId;
  /** This node's incarnation, announced; a peer that is a new incarnation of one seen is refused. */
  readonly incarnations: MemberIncarnations;
  readonly logger: Logger;
  /** The largest frame sent or accepted; a peer sending a larger one is disconnected. Default 64 MiB. */
  readonly maxFrameBytes?: number;
  /** Per connection: bytes waiting to be written beyond which sends are dropped. Default 32 MiB. */
  readonly highWaterMarkBytes?: number;
  /** How long an accepted connection may take to authenticate. Default 2 s. */
  readonly handshakeTimeoutMs?: number;
  /**
   * Accepted connections still in their handshake, in all and from one source address: beyond the
   * total the oldest is closed, beyond the per-source cap the new one. A stranger cannot hold the
   * acceptor's memory or sockets, nor keep the voters out by holding every place. A voter
   * dials each peer once at a time, so a source that is a voter host needs one per voter on it.
   * Defaults 64 and 8.
   */
  readonly maxHandshakes?: number;
  readonly maxHandshakesPerSource?: number;
  /**
   * Failed inbound handshakes that no configured peer answers for (it had not proved the secret) are
   * logged once per source address in this interval, and the count of the others as it ends; every
   * one is counted all the same. Default 5 s.
   */
  readonly strangerLogIntervalMs?: number;
  /** The source addresses that logging keeps an interval for; beyond them new ones share one. Default 128. */
  readonly maxStrangerLogSources?: number;
  /** Redial backoff, doubling from the initial delay up to the cap. Defaults 50 ms and 2 s. */
  readonly reconnectInitialMs?: number;
  readonly reconnectMaxMs?: number;
}

export interface PeerInfo {
  /** An authenticated outbound connection is up: messages and requests to the peer can be sent. */
  readonly connected: boolean;
  /** The public HTTP URL the peer last announced, or null before its first handshake. */
  readonly httpUrl: string | null;
  /**
   * The peer's wall clock now, in ms since the epoch, as its last handshake announced it (PeerLink.
   * peerWallMs): never ahead of the peer's own clock; null before its first handshake.
   */
  readonly wallMs: number | null;
  /**
   * The member ID of the process this node's own connection reached at the peer's configured address
   * (its last handshake); null before one. Another process claiming the name elsewhere cannot set it.
   */
  readonly memberId: string | null;
}

export type RequestHandler = (fromPeerId: string, body: Uint8Array) => Promise<Uint8Array>;

/**
 * The voter's peer network. Each node sends on the one connection it dials to each peer and receives
 * on the connections its peers dial to it, so every pair of voters shares two TCP connections, one per
 * direction. That keeps ownership simple (no tie-breaking when two voters dial each other at once, no
 * connection shared by two reconnect loops) and a request's answer returns on the connection the
 * request went out on.
 *
 * Raft messages are fire-and-forget: one that cannot be sent right now is dropped and counted, never
 * queued without bound, since Raft retransmits what matters.
 */
export class PeerTransport {
  private readonly identity: HandshakeIdentity;
  private readonly links = new Map<string, PeerLink>();
  /** The authenticated connection each peer dialed to this node. */
  private readonly inbound = new Map<string, PeerConnection>();
  /** Inbound connections still in their handshake, oldest first, each with what gives its place back. */
  /** Inbound connections still handshaking, oldest first: where each came from, and how to give its place back. */
  private readonly pendingHandshakes = new Map<PeerConnection, { source: string; settle: () => void }>();
  /** Handshakes closed to make room for newer ones. */
  private readonly evicted = new WeakSet<PeerConnection>();
  /** Every accepted connection, authenticated or still in its handshake. */
  private readonly accepted = new Set<PeerConnection>();
  private readonly sockets = new Set<Socket>();
  private readonly handlers = new Map<string, RequestHandler>();
  private messageHandler: ((message: Message) => void) | null = null;
  /**
   * What no authenticated peer can be charged with: accepted connections until they authenticate
   * (a stranger's, a refused handshake's), handshakes over the cap, messages to no configured peer.
   */
  private readonly unattributed = emptyPeerStats();
  /** The counters per peer, by voter name, with `unattributed` under "" (see peerStats). */
  private readonly counters = new Map<string, PeerStats>([["", this.unattributed]]);
  private readonly log: Logger;
  private readonly maxFrameBytes: number;
  private readonly highWaterMarkBytes: number;
  private readonly handshakeTimeoutMs: number;
  private readonly maxHandshakes: number;
  private readonly maxHandshakesPerSource: number;
  /** Accepted connections in their handshake, by source address. */
  private readonly handshaking = new Map<string, number>();
  private handshakingTotal = 0;
  private readonly strangers: StrangerLog;
  private server: Server | null = null;
  private listening: Promise<void> | null = null;
  private state: "new" | "running" | "closed" = "new";

  constructor(private readonly options: PeerTransportOptions) {
    // The voter's logger already names the node; binding it again would write the key twice per line.
    const named = options.logger.bindings().nodeId === options.nodeId;
    this.log = options.logger.child(
      named ? { component: "peer-transport" } : { component: "peer-transport", nodeId: options.nodeId },
    );
    this.maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.highWaterMarkBytes = options.highWaterMarkBytes ?? 32 * 1024 * 1024;
    this.handshakeTimeoutMs = options.handshakeTimeoutMs ?? 2_000;
    this.maxHandshakes = options.maxHandshakes ?? 64;
    this.maxHandshakesPerSource = options.maxHandshakesPerSource ?? 8;
    this.strangers = new StrangerLog(
      options.strangerLogIntervalMs ?? 5_000,
      options.maxStrangerLogSources ?? 128,
      (source, suppressed, intervalMs) => {
        const from = source === OTHER_SOURCES ? "other addresses" : source;
        this.log.warn(
          { source, suppressed, intervalMs },
          `${suppressed} more failed peer handshakes from ${from} were not logged`,
        );
      },
    );
    this.identity = {
      nodeId: options.nodeId,
      secret: createSecretKey(Buffer.from(options.secret, "utf8")),
      voterIds: new Set(options.voters.map((v) => v.id)),
      httpUrl: options.httpUrl,
      limits: new Map(Object.entries(options.canonicalLimits)),
      clusterId: options.clusterId,
      incarnations: options.incarnations,
      wallMs: options.wallMs ?? Date.now,
    };
    const settings = {
      identity: this.identity,
      logger: this.log,
      maxFrameBytes: this.maxFrameBytes,
      highWaterMarkBytes: this.highWaterMarkBytes,
      handshakeTimeoutMs: this.handshakeTimeoutMs,
      reconnectInitialMs: options.reconnectInitialMs ?? 50,
      reconnectMaxMs: options.reconnectMaxMs ?? 2_000,
      track: (socket: Socket) => this.track(socket),
    };
    for (const peer of options.voters) {
      // A link charges its peer with all it counts, from the first dial on.
      if (peer.id !== options.nodeId)
        this.links.set(peer.id, new PeerLink(peer, { ...settings, stats: this.countersOf(peer.id) }));
    }
  }

  /** Listens on the peer port, then starts dialing every peer. */
  async start(): Promise<void> {
    if (this.state !== "new") throw new PeerError("PeerTransportState", `the transport is ${this.state}`);
    this.state = "running";
    const server = createServer((socket) => this.accept(socket));
    this.server = server;
    this.listening = new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.options.port, this.options.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    try {
      await this.listening;
    } catch (error) {
      this.state = "closed";
      this.server = null;
      throw error;
    }
    // close() ran while the port was being bound: it closes the server; nothing may be dialed.
    if (this.state !== "running") return;
    server.on("error", (error) => this.log.error({ err: error }, "peer listener failed"));
    for (const link of this.links.values()) link.start();
    this.log.info({ address: server.address() }, "peer transport listening");
  }

  /** Closes every connection and the listener; pending requests end with PeerInterruptedError. */
  async close(): Promise<void> {
    if (this.state === "closed") return;
    this.state = "closed";
    // A server still binding cannot be closed yet, and would be left listening.
    await this.listening?.catch(() => {});
    this.strangers.close();
    for (const link of this.links.values()) link.close();
    const closing = new PeerConnectionClosedError("the transport is closing");
    for (const connection of this.accepted) connection.close(closing);
    // Resolve only once every handle is released, so a caller that closes and exits leaves nothing.
    const socketsClosed = [...this.sockets].map(
      (socket) => new Promise<void>((resolve) => socket.once("close", () => resolve())),
    );
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    await Promise.all(socketsClosed);
  }

  /**
   * Sends a Raft message to the voter `message.to` names, or drops it (counted) when that cannot happen
   * now. `released`, if given, is called once the message's bytes are no longer referenced: written to
   * the socket, or dropped (a snapshot chunk's buffer can then be reused).
   */
  send(message: Message, released?: () => void): void {
    const peerId = memberName(message.to);
    const link = this.links.get(peerId);
    let sent = false;
    try {
      sent = link?.connected === true && link.send(FrameType.Raft, encodeRaftMessageParts(message), released);
    } catch (error) {
      this.log.error({ err: error, peerId: message.to, type: message.type }, "cannot send a Raft message");
    }
    if (!sent) {
      (link ? this.countersOf(peerId) : this.unattributed).sendDrops++;
      released?.();
    }
  }

  /**
   * Writes the Raft messages sent in this turn of the event loop now rather than at its end (see
   * PeerConnection.send), for messages that something else in the same turn should not hold up.
   */
  flush(): void {
    for (const link of this.links.values()) link.flush();
  }

  /** Sets the receiver of Raft messages. Each one comes from the authenticated peer it names. */
  onMessage(handler: (message: Message) => void): void {
    this.messageHandler = handler;
  }

  /**
   * Sends `body` to the handler of `channel` on the peer and resolves with its answer. Rejects with
   * PeerUnavailableError (nothing sent), PeerInterruptedError (outcome unknown) or PeerRemoteError
   * (the handler failed).
   */
  request(peerId: string, channel: string, body: Uint8Array, options: RequestOptions): Promise<Uint8Array> {
    if (this.state !== "running") {
      return Promise.reject(new PeerUnavailableError(peerId, `the transport is ${this.state}`));
    }
    const link = this.links.get(peerId);
    if (!link) return Promise.reject(new PeerUnavailableError(peerId, "not a configured peer"));
    return link.request(channel, body, options);
  }

  /**
   * Serves requests on `channel` (replacing any earlier handler). What the handler throws reaches the
   * requester as PeerRemoteError with the error's string `code` (or `Internal`) and message.
   */
  handle(channel: string, handler: RequestHandler): void {
    this.handlers.set(channel, handler);
  }

  peerInfo(peerId: string): PeerInfo | null {
    const link = this.links.get(peerId);
    return link
      ? {
          connected: link.connected,
          httpUrl: link.httpUrl,
          wallMs: link.peerWallMs(),
          memberId: link.dialedMemberId,
        }
      : null;
  }

  /** The counters summed over every peer and what no peer is charged with. */
  stats(): PeerStats {
    const total = emptyPeerStats();
    for (const counters of this.counters.values()) {
      for (const field of Object.keys(total) as (keyof PeerStats)[]) total[field] += counters[field];
    }
    return total;
  }

  /**
   * The counters per peer, by voter name. Under "" is what no authenticated peer can be charged with:
   * an accepted connection's frames and bytes until it authenticates (its handshake, or a stranger's
   * whole connection), refused inbound handshakes, handshakes over the cap.
   */
  peerStats(): ReadonlyMap<string, PeerStats> {
    const copies = new Map<string, PeerStats>();
    for (const [peerId, counters] of this.counters) copies.set(peerId, { ...counters });
    return copies;
  }

  private countersOf(peerId: string): PeerStats {
    let counters = this.counters.get(peerId);
    if (counters === undefined) {
      counters = emptyPeerStats();
      this.counters.set(peerId, counters);
    }
    return counters;
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
  }

  private accept(socket: Socket): void {
    if (this.state !== "running") {
      socket.destroy();
      return;
    }
    const source = socket.remoteAddress ?? "unknown";
    // Over either cap the oldest handshake makes room rather than the newest being refused: strangers
    // holding every place idle until the timeout would otherwise keep the voters out (a voter dialling
    // from an address they share, too), whereas a voter's handshake, over in a few round trips, is
    // never the oldest for long. No log line per eviction: a flood of connections must not become a
    // flood of log lines.
    if ((this.handshaking.get(source) ?? 0) >= this.maxHandshakesPerSource) {
      this.unattributed.handshakesOverCap++;
      this.evictOldestHandshake(source);
    } else if (this.handshakingTotal >= this.maxHandshakes) {
      this.unattributed.handshakesOverCap++;
      this.evictOldestHandshake(null);
    }
    const fromSource = this.handshaking.get(source) ?? 0;
    this.handshaking.set(source, fromSource + 1);
    this.handshakingTotal++;
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      this.pendingHandshakes.delete(connection);
      this.handshakingTotal--;
      const left = (this.handshaking.get(source) ?? 1) - 1;
      if (left === 0) this.handshaking.delete(source);
      else this.handshaking.set(source, left);
    };
    this.track(socket);
    const remoteAddress = `${socket.remoteAddress}:${socket.remotePort}`;
    let peerId: string | null = null;
    // The connection reads `stats` at every count: its peer is charged from the moment it has
    // authenticated, no one before.
    let charged = this.unattributed;
    const connection = new PeerConnection(socket, {
      remoteAddress,
      maxFrameBytes: this.maxFrameBytes,
      highWaterMarkBytes: this.highWaterMarkBytes,
      get stats() {
        return charged;
      },
      onClose: (reason) => this.onInboundClose(connection, peerId, reason),
    });
    this.accepted.add(connection);
    this.pendingHandshakes.set(connection, { source, settle });
    const timeout = setTimeout(
      () => connection.close(new PeerHandshakeError("Timeout", null, "the handshake timed out")),
      this.handshakeTimeoutMs,
    );
    // Until the dialer proves the secret, a failure is anyone's, logged at a bounded rate.
    let proved = false;
    const onProved = () => {
      proved = true;
    };
    acceptHandshake(connection, this.identity, onProved).then(
      (result) => {
        clearTimeout(timeout);
        settle();
        if (connection.closed) return;
        const id = result.peerId;
        this.inbound.get(id)?.close(new PeerConnectionClosedError("replaced by a newer connection"));
        peerId = id;
        charged = this.countersOf(id);
        this.inbound.set(id, connection);
        this.links.get(id)?.announced(result);
        connection.open((frame) => this.onInboundFrame(id, connection, frame));
        this.log.info({ peerId: id, remoteAddress }, "accepted peer connection");
      },
      (error: unknown) => {
        clearTimeout(timeout);
        settle();
        const reason = error instanceof Error ? error : new PeerProtocolError(String(error));
        connection.close(reason);
        // Counted as over the cap, and, like a refusal there, not logged one by one.
        if (this.state === "running" && !this.evicted.has(connection)) {
          this.logInboundFailure(reason, remoteAddress, proved ? null : source);
        }
      },
    );
  }

  /** Closes the oldest inbound handshake, of `source` or (null) of any, giving its place back at once. */
  private evictOldestHandshake(source: string | null): void {
    for (const [connection, pending] of this.pendingHandshakes) {
      if (source !== null && pending.source !== source) continue;
      pending.settle();
      this.evicted.add(connection);
      connection.close(new PeerHandshakeError("Timeout", null, "closed to make room for a newer handshake"));
      return;
    }
  }

  private onInboundClose(connection: PeerConnection, peerId: string | null, reason: Error): void {
    this.accepted.delete(connection);
    // Before authentication the handshake reports the failure (it always settles once closed).
    if (peerId === null) return;
    if (this.inbound.get(peerId) === connection) this.inbound.delete(peerId);
    if (this.state !== "running") return;
    if (reason instanceof PeerHandshakeError) this.logInboundFailure(reason, connection.remoteAddress, null);
    else
      this.log.info(
        { peerId, remoteAddress: connection.remoteAddress, err: reason },
        "peer connection closed",
      );
  }

  /**
   * Counts and logs a failed inbound handshake, or an authenticated connection's refusal. `source` is
   * the address of a connection no configured peer answers for (it had not proved the secret): anyone
   * may connect, so a line per failure would let a stranger write the log as fast as it connects, and
   * those are logged at a bounded rate. A configured peer's are logged each time, as its redial backoff
   * bounds them.
   */
  private logInboundFailure(reason: Error, remoteAddress: string, source: string | null): void {
    const refused =
      reason instanceof PeerHandshakeError && reason.reason !== "Timeout" && reason.reason !== "Disconnected";
    // Not the peer it claims to be, as far as anyone knows: charged to no peer.
    if (refused) this.unattributed.authFailures++;
    if (source !== null && !this.strangers.admit(source)) return;
    if (!(reason instanceof PeerHandshakeError)) {
      this.log.warn({ remoteAddress, err: reason }, `peer connection failed: ${reason.message}`);
      return;
    }
    const fields = { peerId: reason.peerId, remoteAddress, reason: reason.reason };
    if (refused) this.log.error(fields, `peer handshake refused: ${reason.message}`);
    else this.log.warn(fields, `peer handshake failed: ${reason.message}`);
  }

  private onInboundFrame(peerId: string, connection: PeerConnection, frame: Frame): void {
    switch (frame.type) {
      case FrameType.Raft:
        this.deliver(peerId, decodeRaftMessage(frame.body));
        return;
      case FrameType.Request:
        this.serve(peerId, connection, decodeRequest(frame.body));
        return;
      case FrameType.Refuse:
        // The dialer checks this node's proof and limits last, so it can still refuse after Accept.
        throw refusalError(frame.body, peerId, peerId);
      default:
        throw new PeerProtocolError(`unexpected frame type ${frame.type} on an inbound connection`);
    }
  }

  private deliver(peerId: string, message: Message): void {
    if (memberName(message.from) !== peerId || memberName(message.to) !== this.options.nodeId) {
      this.countersOf(peerId).receiveDrops++;
      this.log.warn(
        { peerId, from: message.from, to: message.to, type: message.type },
        "dropped a Raft message not sent by the authenticated peer to this node",
      );
      return;
    }
    const handler = this.messageHandler;
    if (!handler) {
      this.countersOf(peerId).receiveDrops++;
      return;
    }
    try {
      handler(message);
    } catch (error) {
      this.log.error({ err: error, peerId, type: message.type }, "the Raft message handler threw");
    }
  }

  private serve(peerId: string, connection: PeerConnection, request: Request): void {
    const handler = this.handlers.get(request.channel);
    const answer = handler
      ? Promise.resolve().then(() => handler(peerId, request.body))
      : Promise.reject(new PeerError("PeerNoHandler", `no handler for channel ${request.channel}`));
    answer.then(
      (body) => this.answer(peerId, connection, request, body),
      (error: unknown) => this.fail(peerId, connection, request, error),
    );
  }

  private answer(peerId: string, connection: PeerConnection, request: Request, body: Uint8Array): void {
    try {
      if (!connection.send(FrameType.Response, encodeResponse({ id: request.id, body })))
        this.countersOf(peerId).sendDrops++;
    } catch (error) {
      // Too large to send: tell the requester now rather than let it wait for its timeout.
      this.fail(peerId, connection, request, error);
    }
  }

  private fail(peerId: string, connection: PeerConnection, request: Request, error: unknown): void {
    const code = errorCode(error);
    const message = (error instanceof Error ? error.message : String(error)).slice(0, MAX_ERROR_MESSAGE);
    try {
      if (!connection.send(FrameType.Failure, encodeFailure({ id: request.id, code, message }))) {
        this.countersOf(peerId).sendDrops++;
      }
    } catch (sendError) {
      this.countersOf(peerId).sendDrops++;
      this.log.error({ err: sendError, channel: request.channel }, "cannot answer a peer request");
    }
  }
}

/** Error messages are for logs: a handler's oversized message must not make its answer unsendable. */
const MAX_ERROR_MESSAGE = 4096;

function errorCode(error: unknown): string {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code.slice(0, 128);
  }
  return "Internal";
}
