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

export interface Delivery {
  readonly message: Message;
  readonly at: number;
  /** The link was cut while the message was on the wire: it is lost, not delivered. */
  readonly cut: boolean;
}

/**
 * The messages in flight between simulated nodes, each with its delivery time. A partition is a set
 * of cut directed links, so a one-way cut (A hears B, B does not hear A) is as easy as a full split.
 * A cut link loses what is sent on it and what is still on the wire when it is cut.
 */
export class SimNetwork {
  private readonly slots = new Map<NodeId, number>();
  private readonly cuts: boolean[];
  private readonly inFlight = new EventQueue<Message>();
  private current: NetworkFaults;

  constructor(
    private readonly nodes: readonly NodeId[],
    private readonly random: SeededRandom,
    faults: NetworkFaults,
  ) {
    nodes.forEach((id, i) => this.slots.set(id, i));
    this.cuts = new Array<boolean>(nodes.length * nodes.length).fill(false);
    this.current = faults;
  }

  get faults(): NetworkFaults {
    return this.current;
  }

  setFaults(faults: NetworkFaults): void {
    this.current = faults;
  }

  get pending(): number {
    return this.inFlight.size;
  }

  cut(from: NodeId, to: NodeId): void {
    this.cuts[this.link(from, to)] = true;
  }

  /** Cuts every link into and out of `node`. */
  isolate(node: NodeId): void {
    for (const other of this.nodes) {
      if (other === node) continue;
      this.cut(node, other);
      this.cut(other, node);
    }
  }

  /** Cuts every link between the two groups, both ways. */
  split(left: readonly NodeId[], right: readonly NodeId[]): void {
    for (const a of left) {
      for (const b of right) {
        this.cut(a, b);
        this.cut(b, a);
      }
    }
  }

  heal(): void {
    this.cuts.fill(false);
  }

  isCut(from: NodeId, to: NodeId): boolean {
    return this.cuts[this.link(from, to)]!;
  }

  /** Whether any link is cut. */
  get partitioned(): boolean {
    return this.cuts.includes(true);
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

  private link(from: NodeId, to: NodeId): number {
    const a = this.slots.get(from);
    const b = this.slots.get(to);
    if (a === undefined || b === undefined) throw new Error(`unknown link ${from} -> ${to}`);
    return a * this.nodes.length + b;
  }
}
