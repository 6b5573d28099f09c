import { bootstrapState } from "../bootstrap.js";
import { fillChunkFromMemory, MemorySnapshotSink } from "../memory-snapshot-sink.js";
import { MemoryStorage } from "../memory-storage.js";
import type { RaftOptions } from "../raft-config.js";
import { RaftNode } from "../raft-node.js";
import { SeededRandom } from "../seeded-random.js";
import { SnapshotInbox } from "../snapshot-inbox.js";
import type { Entry, Message, NodeId, RandomSource, ReadFailure, ReadState, Ready } from "../types.js";

export interface InMemoryRaftMember {
  raft: RaftNode;
  storage: MemoryStorage;
  applied: Entry[];
  readStates: ReadState[];
  readFailures: ReadFailure[];
  /** Receives the bytes of snapshot chunks; lost with the node on a restart, as a driver's are. */
  inbox: SnapshotInbox<MemorySnapshotSink>;
}

/** Optional extension points of an InMemoryRaftCluster. */
export interface InMemoryRaftClusterHooks {
  /** Builds each core (also on restart); defaults to `new RaftNode(options)`. */
  createNode?: (options: RaftOptions) => RaftNode;
  /** Each node's randomness; defaults to `new SeededRandom(seed)`. */
  random?: (id: NodeId, seed: number) => RandomSource;
  /** Sees every Ready before the cluster persists it: `member.storage` still holds the previous state. */
  onReady?: (id: NodeId, rd: Ready, member: InMemoryRaftMember) => void;
}

/**
 * Raft cores over MemoryStorage in this process, for the core's unit tests (not the AppHost's cluster of
 * voter processes): synchronous and loss-free, `settle()` runs every Ready to completion and
 * delivers messages until nothing moves. Links can be cut per direction, and messages intercepted.
 */
export class InMemoryRaftCluster {
  readonly members = new Map<NodeId, InMemoryRaftMember>();
  readonly cut = new Set<string>();
  /** Every message delivered, in order, for assertions. */
  readonly delivered: Message[] = [];
  /** Every message a node handed out in a Ready (delivered or not), in order. */
  readonly sent: Message[] = [];
  /** Returning false drops the message. */
  filter: (m: Message) => boolean = () => true;
  /**
   * Optional network model applied to each round's batch before the filter: returns what to deliver
   * now (in that order, duplicates allowed) and what to hold back until the next round.
   */
  network: ((batch: readonly Message[]) => { deliver: Message[]; hold: Message[] }) | null = null;
  /**
   * Models a driver that persists asynchronously: a node's Ready is taken in one round and persisted
   * (then its messages sent and `advance()` called) only in the next, so messages are stepped while
   * it is outstanding. A restart discards an unpersisted Ready, as a crash would.
   */
  asyncPersist = false;
  private queue: Message[] = [];
  private readonly pending = new Map<NodeId, Ready>();

  private readonly nodeIds: NodeId[];

  constructor(
    ids: readonly NodeId[],
    readonly extra: Partial<RaftOptions> = {},
    seed = 1,
    readonly hooks: InMemoryRaftClusterHooks = {},
  ) {
    this.nodeIds = [...ids];
    let s = seed;
    for (const id of ids) {
      const storage = new MemoryStorage({ voters: ids });
      this.members.set(id, this.build(id, storage, s++));
    }
  }

  private build(id: NodeId, storage: MemoryStorage, seed: number): InMemoryRaftMember {
    const options: RaftOptions = {
      id,
      storage,
      random: this.hooks.random ? this.hooks.random(id, seed) : new SeededRandom(seed),
      applied: storage.snapshot().meta.index,
      ...this.extra,
    };
    const raft = this.hooks.createNode ? this.hooks.createNode(options) : new RaftNode(options);
    const inbox = new SnapshotInbox(() => new MemorySnapshotSink());
    return { raft, storage, applied: [], readStates: [], readFailures: [], inbox };
  }

  /**
   * A cluster bootstrapped as a real one is, with the configuration as the log's first entry
   * (bootstrap.ts), so a node that joins later learns it from the log.
   */
  static bootstrapped(
    ids: readonly NodeId[],
    extra: Partial<RaftOptions> = {},
    seed = 1,
  ): InMemoryRaftCluster {
    const c = new InMemoryRaftCluster(ids, extra, seed);
    let s = seed;
    for (const id of ids) {
      const storage = new MemoryStorage({ voters: [] });
      const { entries, hardState } = bootstrapState(ids);
      storage.append(entries);
      storage.setHardState(hardState);
      c.members.set(id, c.build(id, storage, s++));
    }
    // Each applies its first entry: until then it knows no configuration and may not campaign.
    c.settle();
    return c;
  }

  /** Every node, those that joined later included. */
  get ids(): readonly NodeId[] {
    return this.nodeIds;
  }

  /**
   * Starts a node on empty storage with no configuration, as a node that was not told to bootstrap:
   * it follows whichever leader reaches it and waits to be added. Also takes the place of a node of
   * that name (its data directory lost).
   */
  join(id: NodeId, seed = 97): void {
    this.pending.delete(id);
    if (!this.nodeIds.includes(id)) this.nodeIds.push(id);
    this.members.set(id, this.build(id, new MemoryStorage({ voters: [] }), seed));
  }

  node(id: NodeId): RaftNode {
    return this.member(id).raft;
  }

  member(id: NodeId): InMemoryRaftMember {
    const m = this.members.get(id);
    if (!m) throw new Error(`no member ${id}`);
    return m;
  }

  /** Rebuilds a node from its storage alone, as after a crash. */
  restart(id: NodeId, seed = 99): void {
    const old = this.member(id);
    this.pending.delete(id);
    this.members.set(id, this.build(id, old.storage, seed));
  }

  /** Rebuilds a node on empty storage, as after its data directory was wiped. */
  wipe(id: NodeId, seed = 98): void {
    this.pending.delete(id);
    this.members.set(id, this.build(id, new MemoryStorage({ voters: this.ids }), seed));
  }

  isolate(id: NodeId): void {
    for (const other of this.ids) {
      if (other === id) continue;
      this.cut.add(`${id}->${other}`);
      this.cut.add(`${other}->${id}`);
    }
  }

  heal(): void {
    this.cut.clear();
  }

  /** Messages handed out by the nodes and not yet delivered (or dropped). */
  inFlight(): readonly Message[] {
    return this.queue;
  }

  /** Handles every Ready of one node (with `asyncPersist`, the one taken last round); its messages join the queue. */
  process(id: NodeId): void {
    const m = this.member(id);
    if (this.asyncPersist) {
      const held = this.pending.get(id);
      if (held) {
        this.pending.delete(id);
        this.handle(id, m, held);
      }
      if (m.raft.hasReady()) this.pending.set(id, m.raft.ready());
      return;
    }
    while (m.raft.hasReady()) this.handle(id, m, m.raft.ready());
  }

  private handle(id: NodeId, m: InMemoryRaftMember, rd: Ready): void {
    this.hooks.onReady?.(id, rd, m);
    if (rd.snapshot) m.storage.applySnapshot(rd.snapshot, m.inbox.take(rd.snapshot).bytes());
    m.storage.append(rd.entries);
    if (rd.hardState) m.storage.setHardState(rd.hardState);
    for (const msg of rd.messages) {
      // A chunk gets its bytes as it is sent, from the sender's snapshot.
      const out = msg.type === "snapshot-chunk" ? fillChunkFromMemory(m.storage, msg) : msg;
      if (out === null) continue;
      this.queue.push(out);
      this.sent.push(out);
    }
    if (rd.snapshot) m.applied = [];
    m.applied.push(...rd.committedEntries);
    m.readStates.push(...rd.readStates);
    m.readFailures.push(...rd.readFailures);
    m.raft.advance();
  }

  /**
   * One round: every node handles its Readys, then every queued message is delivered (unless its
   * link is cut or the filter drops it). Returns how much work moved: messages taken off the queue
   * plus Readys left outstanding (with `asyncPersist`); 0 means the cluster is quiet.
   */
  deliverRound(): number {
    for (const id of this.ids) this.process(id);
    let batch = this.queue;
    this.queue = [];
    const taken = batch.length;
    if (this.network) {
      const { deliver, hold } = this.network(batch);
      batch = deliver;
      this.queue.push(...hold);
    }
    for (const msg of batch) {
      if (this.cut.has(`${msg.from}->${msg.to}`) || !this.filter(msg)) continue;
      this.delivered.push(msg);
      const to = this.member(msg.to);
      to.inbox.step(to.raft, msg);
    }
    return taken + this.pending.size;
  }

  /** Runs until no node has work and no message is in flight. */
  settle(maxRounds = 10_000): void {
    for (let round = 0; round < maxRounds; round++) {
      if (this.deliverRound() === 0) return;
    }
    throw new Error("cluster did not settle");
  }

  tick(id: NodeId, times = 1): void {
    for (let i = 0; i < times; i++) this.node(id).tick();
  }

  /** Ticks every node (or only `only`) once per round, settling in between. */
  tickAll(rounds: number, only: readonly NodeId[] = this.ids): void {
    for (let r = 0; r < rounds; r++) {
      for (const id of only) this.node(id).tick();
      this.settle();
    }
  }

  /**
   * Ticks `only` (every node by default) one round at a time, settling in between, until `done`
   * holds; returns the rounds it took. Throws after `maxRounds`.
   */
  tickUntil(done: () => boolean, maxRounds = 1000, only: readonly NodeId[] = this.ids): number {
    for (let r = 0; r <= maxRounds; r++) {
      if (done()) return r;
      if (r === maxRounds) break;
      for (const id of only) this.node(id).tick();
      this.settle();
    }
    throw new Error(`condition not reached within ${maxRounds} rounds`);
  }

  /** Makes `id` campaign and settles: it wins when it can. */
  elect(id: NodeId): void {
    this.node(id).campaign();
    this.settle();
  }

  leader(): NodeId | null {
    for (const id of this.ids) if (this.node(id).status().role === "leader") return id;
    return null;
  }

  appliedData(id: NodeId): string[] {
    return this.member(id)
      .applied.filter((e) => e.type === "normal")
      .map((e) => new TextDecoder().decode(e.data));
  }
}

export const text = (s: string): Uint8Array => new TextEncoder().encode(s);
