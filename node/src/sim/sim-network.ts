import type { SeededRandom } from "../raft/seeded-random.js";
import type { Message, NodeId } from "../raft/types.js";
import { EventQueue } from "./event-queue.js";

/** How the wire misbehaves. Delays are in simulated time units. */
export interface NetworkFaults {
  readonly dropRate: number;
  readonly duplicateRate: number;
  readonly minDelay: number;
  readonly maxDelay: number;
  /** Chance that one message is held up to `spikeDelay` longer, which reorders it behind later ones. */
  readonly spikeRate: number;
  readonly spikeDelay: number;
}

export type SendOutcome = "queued" | "duplicated" | "dropped" | "cut";

export interface LinkCut {
  readonly from: NodeId;
  readonly to: NodeId;
}

export interface Delivery {
  readonly message: Message;
  readonly at: number;
  /** The link was cut while the message was on the wire: it is lost, not delivered. */
  readonly cut: boolean;
}

/**
 * The messages in flight between simulated nodes, each with its delivery time. A partition is a set
 * of cut directed links, so a one-way cut (A hears B, B does not hear A) is as easy as isolating a
 * node. A cut link loses what is sent on it and what is still on the wire when it is cut. Nodes join
 * the network over the run (`addNode`); a node isolated before another joined stays reachable by it.
 */
export class SimNetwork {
  private readonly nodes: NodeId[] = [];
  private readonly slots = new Map<NodeId, number>();
  /** Per directed link (sender's slot, then receiver's), how many partitions currently cut it. */
  private readonly cuts: number[][] = [];
  private readonly inFlight = new EventQueue<Message>();
  private current: NetworkFaults;

  constructor(
    nodes: readonly NodeId[],
    private readonly random: SeededRandom,
    faults: NetworkFaults,
  ) {
    for (const id of nodes) this.addNode(id);
    this.current = faults;
  }

  /** Connects a new node to every other, its links uncut. */
  addNode(id: NodeId): void {
    if (this.slots.has(id)) throw new Error(`${id} is already on the network`);
    this.slots.set(id, this.nodes.length);
    this.nodes.push(id);
    for (const row of this.cuts) row.push(0);
    this.cuts.push(new Array<number>(this.nodes.length).fill(0));
  }

  setFaults(faults: NetworkFaults): void {
    this.current = faults;
  }

  get pending(): number {
    return this.inFlight.size;
  }

  /** Cuts the link `from` -> `to`; returns the cuts made, for `restore`. */
  cut(from: NodeId, to: NodeId): LinkCut[] {
    this.cuts[this.slot(from)]![this.slot(to)]!++;
    return [{ from, to }];
  }

  /** Cuts every link into and out of `node`. */
  isolate(node: NodeId): LinkCut[] {
    const made: LinkCut[] = [];
    for (const other of this.nodes) {
      if (other === node) continue;
      made.push(...this.cut(node, other), ...this.cut(other, node));
    }
    return made;
  }

  /** Undoes cuts made earlier. A link cut by two overlapping partitions stays cut until both end. */
  restore(cuts: readonly LinkCut[]): void {
    for (const { from, to } of cuts) {
      const row = this.cuts[this.slot(from)]!;
      const b = this.slot(to);
      row[b] = Math.max(0, row[b]! - 1);
    }
  }

  heal(): void {
    for (const row of this.cuts) row.fill(0);
  }

  isCut(from: NodeId, to: NodeId): boolean {
    return this.cuts[this.slot(from)]![this.slot(to)]! > 0;
  }

  send(message: Message, now: number): SendOutcome {
    if (this.isCut(message.from, message.to)) return "cut";
    const f = this.current;
    if (f.dropRate > 0 && this.random.chance(f.dropRate)) return "dropped";
    this.inFlight.push(now + this.delay(f), message);
    if (f.duplicateRate > 0 && this.random.chance(f.duplicateRate)) {
      this.inFlight.push(now + this.delay(f), message);
      return "duplicated";
    }
    return "queued";
  }

  /** The delivery time of the next message, or `Infinity` when nothing is in flight. */
  nextTime(): number {
    return this.inFlight.peekTime();
  }

  next(): Delivery | undefined {
    const item = this.inFlight.pop();
    if (item === undefined) return undefined;
    const message = item.value;
    return { message, at: item.time, cut: this.isCut(message.from, message.to) };
  }

  private delay(f: NetworkFaults): number {
    let d = f.minDelay + this.random.nextInt(f.maxDelay - f.minDelay + 1);
    if (f.spikeRate > 0 && this.random.chance(f.spikeRate)) d += 1 + this.random.nextInt(f.spikeDelay);
    return d;
  }

  private slot(id: NodeId): number {
    const slot = this.slots.get(id);
    if (slot === undefined) throw new Error(`${id} is not on the network`);
    return slot;
  }
}
