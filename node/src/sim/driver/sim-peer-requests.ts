import { PeerInterruptedError, PeerRemoteError, PeerUnavailableError } from "../../peer/peer-errors.js";
import type { RequestOptions } from "../../peer/peer-link.js";
import type { PeerInfo } from "../../peer/peer-transport.js";
import type { SeededRandom } from "../../raft/seeded-random.js";
import type { NodeId } from "../../raft/types.js";
import type { ForwardTransport } from "../../voter/command-router.js";
import type { DriverTimers } from "../../voter/driver-timers.js";

/** A channel's server side, as `PeerTransport.handle` takes it. */
export type RequestHandler = (from: string, body: Uint8Array) => Promise<Uint8Array>;

/** What the request network sees of the run. */
export interface RequestNetworkHost {
  readonly random: SeededRandom;
  now(): number;
  /** Runs `work` at `at` on the simulation's own schedule. */
  at(at: number, work: () => void): void;
  /** The endpoint of the process that now answers to the voter name `name`, if one runs. */
  endpoint(name: string): SimPeerEndpoint | undefined;
  isCut(from: NodeId, to: NodeId): boolean;
  /** Until when `node`'s process is paused; at or before now when it runs. */
  pausedUntil(node: NodeId): number;
  /** The range of a one-way trip's time. */
  readonly delay: readonly [number, number];
}

type RequestOutcome = { answer: Uint8Array } | { error: Error };

/** A request being served: where its answer goes, if its connection stays up. */
interface Served {
  readonly from: SimPeerEndpoint;
  readonly settle: (outcome: RequestOutcome) => void;
}

/** Something on the wire of one connection: it arrives at `at`, after everything before it. */
interface InFlight {
  readonly at: number;
  readonly work: () => void;
  /** Its receiver died before it arrived. */
  readonly undeliverable: () => void;
}

/** One direction of a connection between two process lives: what is on its wire, in order. */
interface Wire {
  readonly from: SimPeerEndpoint;
  readonly to: SimPeerEndpoint;
  readonly queue: InFlight[];
  /** Whether the head's arrival is scheduled. */
  scheduled: boolean;
}

/**
 * The peer network's requests between simulated processes, as `PeerTransport.request` makes them: each
 * goes over a connection from one process life to another, in order on each direction of a link
 * (one TCP connection), and is answered on the same connection. A request is not sent when its peer
 * is not connected (a cut link, no process), and fails as disconnected when the process it goes to
 * dies before it answers (the connection's reset reaches the caller); what a cut link loses is lost,
 * a reset included, and its caller times out. The caller's own timeout and signal end its wait, not
 * the request: a request that was sent is served.
 */
export class SimRequestNetwork {
  /** The wires of connections with something on them, by sender's and receiver's life. */
  private readonly wires = new Map<string, Wire>();

  constructor(private readonly host: RequestNetworkHost) {}

  /** The endpoint of one process life of `node`, on its timers; it lives until `close`. */
  endpoint(node: NodeId, name: string, life: number, timers: DriverTimers): SimPeerEndpoint {
    return new SimPeerEndpoint(this, node, name, life, timers);
  }

  /** The answer or failure of one request, delivered as the network and the peer's life allow. */
  request(
    from: SimPeerEndpoint,
    peerName: string,
    channel: string,
    body: Uint8Array,
    options: RequestOptions,
  ): Promise<Uint8Array> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(new PeerInterruptedError(peerName, "aborted"));
    const to = this.host.endpoint(peerName);
    if (to === undefined || !this.connected(from, to))
      return Promise.reject(new PeerUnavailableError(peerName, "no connection"));
    return new Promise<Uint8Array>((resolve, reject) => {
      let done = false;
      const finish = (outcome: RequestOutcome): void => {
        if (done) return;
        done = true;
        from.timers.clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if ("answer" in outcome) resolve(outcome.answer);
        else reject(outcome.error);
      };
      const timer = from.timers.setTimeout(
        () => finish({ error: new PeerInterruptedError(peerName, "timeout") }),
        options.timeoutMs,
      );
      const onAbort = (): void => finish({ error: new PeerInterruptedError(peerName, "aborted") });
      signal?.addEventListener("abort", onAbort, { once: true });
      // A copy on the wire: the sender may reuse its buffer.
      const sent = new Uint8Array(body);
      this.carry(
        from,
        to,
        () => this.serve(from, to, peerName, channel, sent, finish),
        () => this.reset(to, from, finish),
      );
    });
  }

  /** Whether `from` holds a connection to `to` it may send on. */
  connected(from: SimPeerEndpoint, to: SimPeerEndpoint): boolean {
    return !from.closed && !to.closed && !this.host.isCut(from.node, to.node);
  }

  peerInfo(from: SimPeerEndpoint, peerName: string): PeerInfo | null {
    const to = this.host.endpoint(peerName);
    if (to === undefined) return { connected: false, httpUrl: null, wallMs: null, memberId: null };
    return { connected: this.connected(from, to), httpUrl: null, wallMs: to.timers.now(), memberId: to.node };
  }

  private serve(
    from: SimPeerEndpoint,
    to: SimPeerEndpoint,
    peerName: string,
    channel: string,
    body: Uint8Array,
    finish: Served["settle"],
  ): void {
    const handler = to.handler(channel);
    if (handler === undefined) {
      this.carry(to, from, () =>
        finish({ error: new PeerRemoteError(peerName, "NoHandler", `no handler for ${channel}`) }),
      );
      return;
    }
    const served: Served = { from, settle: finish };
    to.serving.add(served);
    const answered = (outcome: RequestOutcome): void => {
      if (!to.serving.delete(served)) return;
      this.carry(to, from, () => finish(outcome));
    };
    let pending: Promise<Uint8Array>;
    try {
      pending = handler(from.name, body);
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (answer) => answered({ answer: new Uint8Array(answer) }),
      (error: unknown) => {
        const code = (error as { code?: unknown } | null)?.code;
        answered({
          error: new PeerRemoteError(peerName, typeof code === "string" ? code : "Internal", String(error)),
        });
      },
    );
  }

  /** The process of `endpoint` died: what it was serving fails at each caller as disconnected. */
  closed(endpoint: SimPeerEndpoint): void {
    for (const served of endpoint.serving) this.reset(endpoint, served.from, served.settle);
    endpoint.serving.clear();
  }

  /** `from`'s end of a connection to `to` is gone: the reset reaches `to` as the trip allows. */
  private reset(from: SimPeerEndpoint, to: SimPeerEndpoint, settle: (outcome: RequestOutcome) => void): void {
    this.carry(from, to, () => settle({ error: new PeerInterruptedError(from.name, "disconnected") }));
  }

  /**
   * Puts `work` on the wire from `from` to `to`, arriving after a trip and behind whatever went before
   * on that wire. At its arrival: lost when the link is cut; held, with everything behind it, while
   * `to`'s process is paused; `undeliverable` instead once that process died.
   */
  private carry(
    from: SimPeerEndpoint,
    to: SimPeerEndpoint,
    work: () => void,
    undeliverable: () => void = () => undefined,
  ): void {
    const { random, delay } = this.host;
    const key = `${from.node}#${from.life}>${to.node}#${to.life}`;
    let wire = this.wires.get(key);
    if (wire === undefined) {
      wire = { from, to, queue: [], scheduled: false };
      this.wires.set(key, wire);
    }
    const last = wire.queue[wire.queue.length - 1];
    const at = Math.max(this.host.now() + delay[0] + random.nextInt(delay[1] - delay[0] + 1), last?.at ?? 0);
    wire.queue.push({ at, work, undeliverable });
    this.scheduleHead(key, wire);
  }

  private scheduleHead(key: string, wire: Wire): void {
    const head = wire.queue[0];
    if (wire.scheduled || head === undefined) return;
    wire.scheduled = true;
    this.host.at(Math.max(head.at, this.host.now()), () => this.arrive(key, wire));
  }

  /** The head of `wire` arrives, unless its receiver is paused: then it and all behind it wait. */
  private arrive(key: string, wire: Wire): void {
    wire.scheduled = false;
    const { from, to } = wire;
    const paused = this.host.pausedUntil(to.node);
    if (!to.closed && paused > this.host.now()) {
      wire.scheduled = true;
      this.host.at(paused, () => this.arrive(key, wire));
      return;
    }
    const head = wire.queue.shift()!;
    if (wire.queue.length === 0) this.wires.delete(key);
    else this.scheduleHead(key, wire);
    if (to.closed) head.undeliverable();
    else if (!this.host.isCut(from.node, to.node)) head.work();
  }
}

/** One process life's end of the request network, as the command router's ForwardTransport. */
export class SimPeerEndpoint implements ForwardTransport {
  closed = false;
  /** Requests this life is serving, answered or failed as it ends. */
  readonly serving = new Set<Served>();
  private readonly handlers = new Map<string, RequestHandler>();

  constructor(
    private readonly network: SimRequestNetwork,
    readonly node: NodeId,
    /** The voter name the peer network knows this process by. */
    readonly name: string,
    readonly life: number,
    readonly timers: DriverTimers,
  ) {}

  handle(channel: string, handler: RequestHandler): void {
    this.handlers.set(channel, handler);
  }

  handler(channel: string): RequestHandler | undefined {
    return this.handlers.get(channel);
  }

  request(peerId: string, channel: string, body: Uint8Array, options: RequestOptions): Promise<Uint8Array> {
    if (this.closed) return Promise.reject(new PeerUnavailableError(peerId, "the transport is closed"));
    return this.network.request(this, peerId, channel, body, options);
  }

  peerInfo(peerId: string): PeerInfo | null {
    return this.network.peerInfo(this, peerId);
  }

  /** The process died or exited: nothing more is sent or served here. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.network.closed(this);
  }
}
