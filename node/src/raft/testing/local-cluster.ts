import { MemoryStorage } from "../memory-storage.js";
import type { RaftOptions } from "../raft-config.js";
import { RaftNode } from "../raft-node.js";
import { SeededRandom } from "../seeded-random.js";
import type { Entry, Message, NodeId, ReadFailure, ReadState } from "../types.js";

export interface LocalMember {
  raft: RaftNode;
  storage: MemoryStorage;
  applied: Entry[];
  readStates: ReadState[];
  readFailures: ReadFailure[];
}

/**
 * A synchronous, loss-free cluster for unit tests: `settle()` runs every Ready to completion and
 * delivers messages until nothing moves. Links can be cut per direction, and messages intercepted.
 */
export class LocalCluster {
  readonly members = new Map<NodeId, LocalMember>();
  readonly cut = new Set<string>();
  /** Every message delivered, in order, for assertions. */
  readonly delivered: Message[] = [];
  /** Returning false drops the message. */
  filter: (m: Message) => boolean = () => true;
  private queue: Message[] = [];

  constructor(
    readonly ids: readonly NodeId[],
    readonly extra: Partial<RaftOptions> = {},
    seed = 1,
  ) {
    let s = seed;
    for (const id of ids) {
      const storage = new MemoryStorage({ voters: ids });
      this.members.set(id, this.build(id, storage, s++));
    }
  }

  private build(
    id: NodeId,
    storage: MemoryStorage,
    seed: number,
    ctor: typeof RaftNode = RaftNode,
  ): LocalMember {
    const raft = new ctor({
      id,
      voters: this.ids,
      storage,
      random: new SeededRandom(seed),
      applied: storage.snapshot().meta.index,
      ...this.extra,
    });
    return { raft, storage, applied: [], readStates: [], readFailures: [] };
  }

  node(id: NodeId): RaftNode {
    return this.member(id).raft;
  }

  member(id: NodeId): LocalMember {
    const m = this.members.get(id);
    if (!m) throw new Error(`no member ${id}`);
    return m;
  }

  /** Rebuilds a node from its storage alone, as after a crash. */
  restart(id: NodeId, seed = 99): void {
    const old = this.member(id);
    this.members.set(id, this.build(id, old.storage, seed));
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

  /** Handles every Ready of one node; its messages join the queue. */
  process(id: NodeId): void {
    const m = this.member(id);
    while (m.raft.hasReady()) {
      const rd = m.raft.ready();
      if (rd.snapshot) m.storage.applySnapshot(rd.snapshot);
      m.storage.append(rd.entries);
      if (rd.hardState) m.storage.setHardState(rd.hardState);
      this.queue.push(...rd.messages);
      if (rd.snapshot) m.applied = [];
      m.applied.push(...rd.committedEntries);
      m.readStates.push(...rd.readStates);
      m.readFailures.push(...rd.readFailures);
      m.raft.advance();
    }
  }

  /** Runs until no node has work and no message is in flight. */
  settle(maxRounds = 10_000): void {
    for (let round = 0; round < maxRounds; round++) {
      for (const id of this.ids) this.process(id);
      if (this.queue.length === 0) return;
      const batch = this.queue;
      this.queue = [];
      for (const msg of batch) {
        if (this.cut.has(`${msg.from}->${msg.to}`) || !this.filter(msg)) continue;
        this.delivered.push(msg);
        this.member(msg.to).raft.step(msg);
      }
    }
    throw new Error("cluster did not settle");
  }

  tick(id: NodeId, times = 1): void {
    for (let i = 0; i < times; i++) this.node(id).tick();
  }

  /** Ticks every node once per round, settling in between. */
  tickAll(rounds: number): void {
    for (let r = 0; r < rounds; r++) {
      for (const id of this.ids) this.node(id).tick();
      this.settle();
    }
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
