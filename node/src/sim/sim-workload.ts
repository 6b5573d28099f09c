import {
  type Entry,
  type NodeId,
  ProposalRefusedError,
  type ReadFailure,
  type ReadState,
  type SeededRandom,
} from "../raft/index.js";
import { commandDigest } from "./digest.js";
import type { FaultProfile } from "./fault-profile.js";
import type { SafetyChecker } from "./invariants.js";
import type { PendingProposal, SimNode } from "./node-registry.js";
import { pick, weighted } from "./random-choices.js";
import { coreFailure, fail } from "./sim-failure.js";
import { encodeCommand } from "./sim-state-machine.js";
import type { Counters } from "./sim-stats.js";
import type { TraceKind } from "./trace.js";

interface IssuedRead {
  readonly node: NodeId;
  /** The highest acknowledged write when the read was issued: the read must see it. */
  readonly minIndex: number;
  answered: boolean;
}

/** What the workload sees of the run it drives. */
export interface WorkloadHost {
  /** The run's stream: client choices interleave with the simulator's own draws. */
  readonly random: SeededRandom;
  readonly profile: Pick<FaultProfile, "clientMix" | "leaderBias" | "maxPadding">;
  readonly checker: SafetyChecker;
  readonly counters: Counters;
  /** Nodes whose core is running. */
  running(): SimNode[];
  /** The live node that believes itself leader in the highest term, if any. */
  knownLeader(): SimNode | null;
  note(node: string, kind: TraceKind, text: string): void;
  /** A core took an input: the host looks at its status and takes its Readys. */
  afterInput(node: SimNode): void;
}

/**
 * The clients of a run: they propose writes (to leaders mostly, to any live node sometimes), issue
 * linearizable reads and ask leaders to transfer leadership. They track each accepted proposal until
 * it is applied or lost, and each read until it is answered and served.
 */
export class SimWorkload {
  private readonly issuedReads = new Map<string, IssuedRead>();
  private nextCommandId = 1;
  private nextReadId = 1;

  constructor(private readonly host: WorkloadHost) {}

  /** One client operation, chosen by the profile's mix. */
  operate(): void {
    const mix = this.host.profile.clientMix;
    switch (weighted(this.host.random, [mix.propose, mix.proposeBatch, mix.read, mix.transfer])) {
      case 0:
        this.propose(1);
        return;
      case 1:
        this.propose(2 + this.host.random.nextInt(3));
        return;
      case 2:
        this.read();
        return;
      default:
        this.transfer();
    }
  }

  /**
   * `node` applied `e`, whose content has `digest`: a proposal made there at its index is now
   * acknowledged, or lost if another term's entry took its place.
   */
  applied(node: SimNode, e: Entry, digest: number): void {
    const p = node.proposals.get(e.index);
    if (p === undefined) return;
    node.proposals.delete(e.index);
    if (p.term !== e.term) {
      this.host.counters.proposalsLost++;
    } else if (p.digest !== digest) {
      fail(
        "acknowledged-write",
        `${node.id} applied ${e.index}/t${e.term}, which is not what it was asked to propose`,
      );
    } else {
      this.acknowledge(node, e.index, p);
    }
  }

  /** `node` installed a snapshot up to `index`: its proposals there are settled by the committed log. */
  snapshotInstalled(node: SimNode, index: number): void {
    const { checker, counters } = this.host;
    for (const [at, p] of node.proposals) {
      if (at > index) continue;
      node.proposals.delete(at);
      if (checker.isCommitted(at, p.term, p.digest)) this.acknowledge(node, at, p);
      else counters.proposalsLost++;
    }
    this.serveReads(node);
  }

  readConfirmed(node: SimNode, rs: ReadState): void {
    const issued = this.answerRead(node, rs.requestId);
    this.host.checker.observeReadState(node.id, rs.requestId, rs.index, issued.minIndex);
    this.host.counters.readsConfirmed++;
    if (node.state.live.applied >= rs.index) this.host.counters.readsServed++;
    else node.waitingReads.push({ requestId: rs.requestId, index: rs.index });
  }

  readFailed(node: SimNode, rf: ReadFailure): void {
    this.answerRead(node, rf.requestId);
    this.host.counters.readsFailed++;
  }

  /** Serves the confirmed reads whose index `node` has now applied. */
  serveReads(node: SimNode): void {
    if (node.waitingReads.length === 0) return;
    const applied = node.state.live.applied;
    const still = node.waitingReads.filter((r) => r.index > applied);
    this.host.counters.readsServed += node.waitingReads.length - still.length;
    node.waitingReads = still;
  }

  private acknowledge(node: SimNode, index: number, p: PendingProposal): void {
    this.host.checker.observeAck(node.id, index, p.term, p.digest);
    this.host.counters.acked++;
    this.host.note(node.id, "client", `ack ${index}/t${p.term}`);
  }

  /** Every read is answered once, by the node it was issued at. */
  private answerRead(node: SimNode, requestId: string): IssuedRead {
    const issued = this.issuedReads.get(requestId);
    if (issued === undefined || issued.node !== node.id) {
      fail("core-contract", `${node.id} answers read ${requestId}, which it never issued`);
    }
    if (issued.answered) fail("core-contract", `${node.id} answers read ${requestId} twice`);
    issued.answered = true;
    return issued;
  }

  private propose(count: number): void {
    const { random, profile, counters } = this.host;
    const live = this.host.running();
    if (live.length === 0) return;
    // Clients with stale routing keep writing to deposed leaders too: that is how divergent tails form.
    const leaders = live.filter((n) => n.status?.role === "leader");
    const node =
      leaders.length > 0 && random.chance(profile.leaderBias) ? pick(random, leaders) : pick(random, live);
    const data: Uint8Array[] = [];
    for (let k = 0; k < count; k++) {
      const padding = random.nextInt(profile.maxPadding + 1);
      data.push(encodeCommand(this.nextCommandId++, random.nextInt(256), random.nextUint32(), padding));
    }
    counters.proposals++;
    let first: number;
    let term: number;
    try {
      if (count === 1) {
        const r = node.core!.propose(data[0]!);
        first = r.index;
        term = r.term;
      } else {
        const r = node.core!.proposeBatch(data);
        first = r.firstIndex;
        term = r.term;
      }
    } catch (error) {
      if (!(error instanceof ProposalRefusedError)) throw coreFailure(node.id, "propose", error);
      counters.proposalsRefused++;
      this.host.note(node.id, "client", `propose x${count} refused: ${error.reason}`);
      return;
    }
    for (let k = 0; k < count; k++) node.proposals.set(first + k, { term, digest: commandDigest(data[k]!) });
    const span = count === 1 ? `${first}` : `${first}..${first + count - 1}`;
    this.host.note(node.id, "client", `propose x${count} -> ${span}/t${term}`);
    this.host.afterInput(node);
  }

  private read(): void {
    const live = this.host.running();
    if (live.length === 0) return;
    const node = pick(this.host.random, live);
    const requestId = `r${this.nextReadId++}`;
    this.host.counters.reads++;
    try {
      node.core!.readIndex(requestId);
    } catch (error) {
      if (!(error instanceof ProposalRefusedError)) throw coreFailure(node.id, "readIndex", error);
      this.host.counters.readsRefused++;
      this.host.note(node.id, "client", `read ${requestId} refused: ${error.reason}`);
      return;
    }
    // Everything applied anywhere had committed before this read began, acknowledged or not (its
    // proposer may have crashed first): a linearizable read must see all of it.
    const minIndex = this.host.checker.committedIndex;
    this.issuedReads.set(requestId, { node: node.id, minIndex, answered: false });
    this.host.note(node.id, "client", `read ${requestId} (must see ${minIndex})`);
    this.host.afterInput(node);
  }

  private transfer(): void {
    const leader = this.host.knownLeader();
    if (leader === null) return;
    const others = leader.status!.conf.voters.filter((id) => id !== leader.id);
    if (others.length === 0) return;
    const to = pick(this.host.random, others);
    this.host.counters.transfers++;
    try {
      leader.core!.transferLeadership(to);
    } catch (error) {
      if (!(error instanceof ProposalRefusedError)) throw coreFailure(leader.id, "transferLeadership", error);
      this.host.counters.transfersRefused++;
      this.host.note(leader.id, "client", `transfer to ${to} refused: ${error.reason}`);
      return;
    }
    this.host.note(leader.id, "client", `transfer leadership to ${to}`);
    this.host.afterInput(leader);
  }
}
