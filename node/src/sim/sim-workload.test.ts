import { describe, expect, it } from "vitest";
import {
  type Entry,
  type NodeId,
  type ProposalRefusalReason,
  ProposalRefusedError,
  type RaftNode,
  type RaftStatus,
  SeededRandom,
} from "../raft/index.js";
import { entryDigest } from "./digest.js";
import type { ClientMix } from "./fault-profile.js";
import { type InvariantName, InvariantViolation, SafetyChecker } from "./invariants.js";
import { INITIAL_VOTERS, type SimNode } from "./node-registry.js";
import { type Counters, emptyCounters } from "./sim-stats.js";
import { SimWorkload } from "./sim-workload.js";
import { testNodeRegistry } from "./test-fixtures/test-node-registry.js";

/** A core that accepts (or refuses) what clients ask and remembers it. */
class StubCore {
  readonly proposed: Uint8Array[] = [];
  readonly reads: string[] = [];
  readonly transfers: NodeId[] = [];
  refuse: ProposalRefusalReason | null = null;
  crash = false;
  next = 1;

  constructor(readonly term: number) {}

  propose(data: Uint8Array): { index: number; term: number } {
    return { index: this.accept([data]), term: this.term };
  }

  proposeBatch(data: readonly Uint8Array[]): { firstIndex: number; term: number } {
    return { firstIndex: this.accept(data), term: this.term };
  }

  readIndex(requestId: string): void {
    this.check();
    this.reads.push(requestId);
  }

  transferLeadership(to: NodeId): void {
    this.check();
    this.transfers.push(to);
  }

  private accept(data: readonly Uint8Array[]): number {
    this.check();
    this.proposed.push(...data);
    const first = this.next;
    this.next += data.length;
    return first;
  }

  private check(): void {
    if (this.crash) throw new Error("boom");
    if (this.refuse !== null) throw new ProposalRefusedError(this.refuse, null, "refused");
  }
}

const ONLY = (kind: keyof ClientMix): ClientMix => ({
  propose: 0,
  proposeBatch: 0,
  read: 0,
  transfer: 0,
  [kind]: 1,
});

function setup(mix: ClientMix, leaderBias = 0) {
  const nodes = testNodeRegistry();
  const cores = new Map<NodeId, StubCore>();
  for (const _ of INITIAL_VOTERS) {
    const node = nodes.create(INITIAL_VOTERS);
    const core = new StubCore(2);
    cores.set(node.id, core);
    node.core = core as unknown as RaftNode;
    node.status = status(node.id, "follower");
  }
  const checker = new SafetyChecker();
  const counters: Counters = emptyCounters();
  const notes: string[] = [];
  const inputs: NodeId[] = [];
  let leader: SimNode | null = null;
  const workload = new SimWorkload({
    random: new SeededRandom(7),
    profile: { clientMix: mix, leaderBias, maxPadding: 4 },
    checker,
    counters,
    running: () => nodes.running(),
    knownLeader: () => leader,
    note: (node, kind, text) => notes.push(`${node} ${kind} ${text}`),
    afterInput: (node) => inputs.push(node.id),
  });
  const node = (id: NodeId): SimNode => nodes.get(id)!;
  const core = (id: NodeId): StubCore => cores.get(id)!;
  const lead = (id: NodeId): void => {
    leader = node(id);
    leader.status = status(id, "leader");
  };
  /** `at` applies `e`, committing it first as the simulator's apply does. */
  const apply = (at: SimNode, e: Entry): void => {
    const sm = at.state.live;
    const digest = entryDigest(e);
    sm.apply(e, digest);
    checker.observeApply(at.id, e, digest, sm.digest, e.term);
    workload.applied(at, e, digest);
  };
  return { workload, checker, counters, notes, inputs, node, core, lead, apply };
}

function status(id: NodeId, role: RaftStatus["role"]): RaftStatus {
  return {
    id,
    term: 2,
    vote: null,
    commit: 0,
    applied: 0,
    role,
    leader: null,
    lastIndex: 0,
    transferee: null,
    leaderCommit: 0,
    conf: { voters: [...INITIAL_VOTERS] },
    progress: {},
  };
}

function entry(index: number, term: number, data: Uint8Array): Entry {
  return { index, term, type: "normal", data };
}

/** The invariant `action` breaks; fails the test when it breaks none. */
function broken(action: () => void): InvariantName {
  try {
    action();
  } catch (error) {
    if (error instanceof InvariantViolation) return error.invariant;
    throw error;
  }
  throw new Error("no invariant broken");
}

/** The node `operate` proposed to, and the core there. */
function proposedAt(w: ReturnType<typeof setup>): { at: SimNode; core: StubCore } {
  for (const id of INITIAL_VOTERS) {
    const core = w.core(id);
    if (core.proposed.length > 0) return { at: w.node(id), core };
  }
  throw new Error("nothing was proposed");
}

describe("SimWorkload", () => {
  it("acknowledges a proposal once its node applies it at the promised index and term", () => {
    const w = setup(ONLY("propose"));
    w.workload.operate();
    const { at, core } = proposedAt(w);
    expect(w.counters.proposals).toBe(1);
    expect([...at.proposals.keys()]).toEqual([1]);
    expect(w.inputs).toEqual([at.id]);
    w.apply(at, entry(1, 2, core.proposed[0]!));
    expect(at.proposals.size).toBe(0);
    expect(w.counters.acked).toBe(1);
    expect(w.checker.maxAcked).toBe(1);
    expect(w.notes).toContain(`${at.id} client ack 1/t2`);
  });

  it("counts a proposal whose index another term's entry took as lost, not acknowledged", () => {
    const w = setup(ONLY("propose"));
    w.workload.operate();
    const { at, core } = proposedAt(w);
    w.apply(at, entry(1, 3, core.proposed[0]!));
    expect(w.counters.proposalsLost).toBe(1);
    expect(w.counters.acked).toBe(0);
    expect(at.proposals.size).toBe(0);
  });

  it("other content applied at the promised index and term breaks acknowledged-write", () => {
    const w = setup(ONLY("propose"));
    w.workload.operate();
    const { at } = proposedAt(w);
    expect(broken(() => w.apply(at, entry(1, 2, new Uint8Array([1, 2, 3]))))).toBe("acknowledged-write");
  });

  it("tracks every index of a batch", () => {
    const w = setup(ONLY("proposeBatch"));
    w.workload.operate();
    const { at, core } = proposedAt(w);
    const n = core.proposed.length;
    expect(n).toBeGreaterThanOrEqual(2);
    expect(n).toBeLessThanOrEqual(4);
    expect([...at.proposals.keys()]).toEqual(Array.from({ length: n }, (_, k) => 1 + k));
  });

  it("counts a refused proposal and waits for nothing; any other throw breaks the core contract", () => {
    const w = setup(ONLY("propose"));
    for (const id of INITIAL_VOTERS) w.core(id).refuse = "NotLeader";
    w.workload.operate();
    expect(w.counters.proposalsRefused).toBe(1);
    expect(INITIAL_VOTERS.every((id) => w.node(id).proposals.size === 0)).toBe(true);
    expect(w.inputs).toEqual([]);
    for (const id of INITIAL_VOTERS) w.core(id).crash = true;
    expect(broken(() => w.workload.operate())).toBe("core-contract");
  });

  it("sends proposals to a node that believes it leads when the bias says so", () => {
    const w = setup(ONLY("propose"), 1);
    w.lead("n2");
    for (let k = 0; k < 10; k++) w.workload.operate();
    expect(w.core("n2").proposed).toHaveLength(10);
  });

  it("serves a confirmed read once its node has applied the read's index", () => {
    const w = setup(ONLY("read"));
    w.workload.operate();
    const id = INITIAL_VOTERS.find((n) => w.core(n).reads.length > 0)!;
    const at = w.node(id);
    expect(w.core(id).reads).toEqual(["r1"]);
    w.workload.readConfirmed(at, { requestId: "r1", index: 1 });
    expect(w.counters.readsConfirmed).toBe(1);
    expect(w.counters.readsServed).toBe(0);
    at.state.live.apply(entry(1, 1, new Uint8Array([9])));
    w.workload.serveReads(at);
    expect(w.counters.readsServed).toBe(1);
    expect(at.waitingReads).toEqual([]);
  });

  it("each read is answered once, by the node it was issued at", () => {
    const w = setup(ONLY("read"));
    w.workload.operate();
    const id = INITIAL_VOTERS.find((n) => w.core(n).reads.length > 0)!;
    const other = INITIAL_VOTERS.find((n) => n !== id)!;
    expect(
      broken(() => w.workload.readFailed(w.node(other), { requestId: "r1", reason: "LeadershipLost" })),
    ).toBe("core-contract");
    expect(
      broken(() => w.workload.readFailed(w.node(id), { requestId: "r9", reason: "LeadershipLost" })),
    ).toBe("core-contract");
    w.workload.readFailed(w.node(id), { requestId: "r1", reason: "LeadershipLost" });
    expect(w.counters.readsFailed).toBe(1);
    expect(broken(() => w.workload.readConfirmed(w.node(id), { requestId: "r1", index: 0 }))).toBe(
      "core-contract",
    );
  });

  it("a read must see every write acknowledged before it was issued", () => {
    // The workload reads its mix at each operation, so the test switches from writing to reading.
    const mix: { -readonly [K in keyof ClientMix]: number } = ONLY("propose");
    const w = setup(mix);
    w.workload.operate();
    const { at, core } = proposedAt(w);
    w.apply(at, entry(1, 2, core.proposed[0]!));
    mix.propose = 0;
    mix.read = 1;
    w.workload.operate();
    const id = INITIAL_VOTERS.find((n) => w.core(n).reads.length > 0)!;
    expect(broken(() => w.workload.readConfirmed(w.node(id), { requestId: "r1", index: 0 }))).toBe(
      "linearizable-read",
    );
  });

  it("asks the leader to transfer to another voter of its configuration", () => {
    const w = setup(ONLY("transfer"));
    w.workload.operate();
    expect(w.counters.transfers).toBe(0);
    w.lead("n1");
    for (let k = 0; k < 10; k++) w.workload.operate();
    expect(w.counters.transfers).toBe(10);
    const to = new Set(w.core("n1").transfers);
    expect([...to].sort()).toEqual(["n2", "n3"]);
  });

  it("settles a node's proposals a snapshot covers by the committed log", () => {
    const w = setup(ONLY("proposeBatch"));
    w.workload.operate();
    const { at, core } = proposedAt(w);
    const e1 = entry(1, 2, core.proposed[0]!);
    // Another node applied the first proposal; the snapshot brings this one up to it.
    const other = w.node(INITIAL_VOTERS.find((id) => id !== at.id)!);
    other.state.live.apply(e1);
    w.checker.observeApply(other.id, e1, entryDigest(e1), other.state.live.digest, 2);
    w.workload.snapshotInstalled(at, 1);
    expect(w.counters.acked).toBe(1);
    expect(at.proposals.has(1)).toBe(false);
    expect(at.proposals.has(2)).toBe(true);
  });
});
