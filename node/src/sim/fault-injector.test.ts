import { describe, expect, it } from "vitest";
import { type Message, type NodeId, type RaftNode, SeededRandom } from "../raft/index.js";
import { FaultInjector } from "./fault-injector.js";
import { DEFAULT_PROFILE, type FaultMix, type FaultProfile } from "./fault-profile.js";
import type { MembershipOperator } from "./membership-operator.js";
import { INITIAL_VOTERS, type NodeRegistry, type SimNode } from "./node-registry.js";
import type { SimEvent } from "./sim-events.js";
import { SimNetwork } from "./sim-network.js";
import { type Counters, emptyCounters } from "./sim-stats.js";
import { testNodeRegistry } from "./test-fixtures/test-node-registry.js";

const NO_FAULTS: FaultMix = {
  crash: 0,
  isolate: 0,
  oneWayCut: 0,
  dropBurst: 0,
  duplicateBurst: 0,
  delayBurst: 0,
  diskStall: 0,
  wipe: 0,
};

/** Calm is perfect and bursts are total, so one send or one write shows which level is in force. */
const PROFILE: FaultProfile = {
  ...DEFAULT_PROFILE,
  network: { dropRate: 0, duplicateRate: 0, minDelay: 1, maxDelay: 1, spikeRate: 0, spikeDelay: 0 },
  disk: { minSyncDelay: 1, maxSyncDelay: 1, stallRate: 0, stallDelay: 0 },
  bursts: {
    dropRate: 1,
    duplicateRate: 1,
    spikeRate: 1,
    spikeDelay: 50,
    diskStallRate: 1,
    diskStallDelay: 50,
  },
  maxCrashed: 1,
  downtime: [10, 20],
  faultDuration: [30, 40],
};

interface Setup {
  readonly injector: FaultInjector;
  readonly nodes: NodeRegistry;
  readonly network: SimNetwork;
  readonly counters: Counters;
  readonly events: { at: number; event: SimEvent }[];
  readonly stopped: NodeId[];
  readonly notes: string[];
  lead(id: NodeId): void;
}

function setup(
  faultMix: Partial<FaultMix>,
  over: Partial<FaultProfile> = {},
  operator: MembershipOperator | null = null,
): Setup {
  const profile: FaultProfile = { ...PROFILE, ...over, faultMix: { ...NO_FAULTS, ...faultMix } };
  const nodes = testNodeRegistry(profile.disk);
  for (const _ of INITIAL_VOTERS) nodes.create(INITIAL_VOTERS).core = {} as RaftNode;
  const network = new SimNetwork([...INITIAL_VOTERS], new SeededRandom(4), profile.network);
  const counters = emptyCounters();
  const events: { at: number; event: SimEvent }[] = [];
  const stopped: NodeId[] = [];
  const notes: string[] = [];
  let leader: SimNode | null = null;
  const injector = new FaultInjector({
    random: new SeededRandom(5),
    profile,
    nodes,
    network,
    operator,
    counters,
    now: () => 100,
    schedule: (at, event) => events.push({ at, event }),
    note: (node, kind, text) => notes.push(`${node} ${kind} ${text}`),
    knownLeader: () => leader,
    stop: (node) => {
      node.core = null;
      stopped.push(node.id);
    },
  });
  const lead = (id: NodeId): void => {
    leader = nodes.get(id)!;
  };
  return { injector, nodes, network, counters, events, stopped, notes, lead };
}

function heartbeat(from: NodeId, to: NodeId): Message {
  return { type: "heartbeat", from, to, term: 1, commit: 0, readRound: 0 };
}

function syncDelay(node: SimNode): number {
  const delay = node.disk.write({ snapshot: null, entries: [], hardState: null });
  node.disk.sync();
  return delay;
}

describe("FaultInjector", () => {
  it("a drop burst drops every message until the last overlapping one of its kind ends", () => {
    const s = setup({ dropBurst: 1 });
    s.injector.inject();
    s.injector.inject();
    expect(s.counters.bursts).toBe(2);
    expect(s.events.map((e) => e.event)).toEqual([
      { kind: "burst-end", burst: "drop" },
      { kind: "burst-end", burst: "drop" },
    ]);
    for (const { at } of s.events) expect(at).toBeGreaterThanOrEqual(130);
    for (const { at } of s.events) expect(at).toBeLessThanOrEqual(140);
    expect(s.network.send(heartbeat("n1", "n2"), 100)).toBe("dropped");
    s.injector.endBurst("drop");
    expect(s.network.send(heartbeat("n1", "n2"), 100)).toBe("dropped");
    s.injector.endBurst("drop");
    expect(s.network.send(heartbeat("n1", "n2"), 100)).toBe("queued");
  });

  it("a duplicate burst duplicates, and a disk burst stalls every disk, its own kind only", () => {
    const s = setup({ duplicateBurst: 1 });
    s.injector.inject();
    expect(s.network.send(heartbeat("n1", "n2"), 100)).toBe("duplicated");
    expect(syncDelay(s.nodes.get("n1")!)).toBe(1);
    const d = setup({ diskStall: 1 });
    d.injector.inject();
    expect(d.network.send(heartbeat("n1", "n2"), 100)).toBe("queued");
    expect(syncDelay(d.nodes.get("n1")!)).toBeGreaterThan(1);
    d.injector.endBurst("disk");
    expect(syncDelay(d.nodes.get("n1")!)).toBe(1);
  });

  it("isolates a node until the heal it schedules", () => {
    const s = setup({ isolate: 1 });
    s.injector.inject();
    expect(s.counters.partitions).toBe(1);
    const [scheduled] = s.events;
    if (scheduled?.event.kind !== "heal") throw new Error("no heal scheduled");
    const id = /isolate (n\d)/.exec(scheduled.event.what)![1]!;
    const others = INITIAL_VOTERS.filter((n) => n !== id);
    for (const other of others) {
      expect(s.network.isCut(id, other)).toBe(true);
      expect(s.network.isCut(other, id)).toBe(true);
    }
    s.injector.heal(scheduled.event.cuts, scheduled.event.what);
    for (const other of others) expect(s.network.isCut(id, other)).toBe(false);
    expect(s.notes).toContain(`- fault heal isolate ${id}`);
  });

  it("cuts one direction of one link", () => {
    const s = setup({ oneWayCut: 1 });
    s.injector.inject();
    const [scheduled] = s.events;
    if (scheduled?.event.kind !== "heal") throw new Error("no heal scheduled");
    const [, from, to] = /cut (n\d) -> (n\d)/.exec(scheduled.event.what)!;
    expect(s.network.isCut(from!, to!)).toBe(true);
    expect(s.network.isCut(to!, from!)).toBe(false);
  });

  it("crashes a running node and schedules its restart, never more than maxCrashed at once", () => {
    const s = setup({ crash: 1 });
    s.injector.inject();
    expect(s.stopped).toHaveLength(1);
    expect(s.counters.crashes).toBe(1);
    const node = s.nodes.get(s.stopped[0]!)!;
    expect(s.events).toHaveLength(1);
    expect(s.events[0]!.event).toEqual({ kind: "restart", node });
    expect(s.events[0]!.at).toBeGreaterThanOrEqual(110);
    expect(s.events[0]!.at).toBeLessThanOrEqual(120);
    s.injector.inject();
    expect(s.stopped).toHaveLength(1);
  });

  it("aims at the leader when the profile's leader bias says so", () => {
    const s = setup({ crash: 1 }, { leaderFaultBias: 1, maxCrashed: 3 });
    s.lead("n2");
    s.injector.inject();
    expect(s.stopped).toEqual(["n2"]);
  });

  it("wipes a disk only with an operator, and only one the operator may lose", () => {
    const none = setup({ wipe: 1 });
    none.injector.inject();
    expect(none.counters.wipes).toBe(0);

    const wiped: NodeId[] = [];
    const operator = {
      mayWipe: (id: NodeId) => id === "n3",
      wiped: (id: NodeId) => wiped.push(id),
    } as unknown as MembershipOperator;
    const s = setup({ wipe: 1 }, {}, operator);
    s.injector.inject();
    const n3 = s.nodes.get("n3")!;
    expect(wiped).toEqual(["n3"]);
    expect(s.stopped).toEqual(["n3"]);
    expect(n3.wiped && n3.retired).toBe(true);
    expect(s.counters.wipes).toBe(1);
    // Nothing else may be lost: a second wipe finds no candidate.
    s.injector.inject();
    expect(s.counters.wipes).toBe(1);
  });

  it("stopping all faults heals every link and ends every burst", () => {
    const s = setup({ isolate: 1, dropBurst: 1, diskStall: 1 });
    for (let k = 0; k < 12; k++) s.injector.inject();
    expect(s.counters.partitions).toBeGreaterThan(0);
    expect(s.notes).toContain("- fault drop burst begins");
    expect(s.notes).toContain("- fault disk burst begins");
    s.injector.stopAll();
    for (const from of INITIAL_VOTERS) {
      for (const to of INITIAL_VOTERS) if (from !== to) expect(s.network.isCut(from, to)).toBe(false);
    }
    expect(s.network.send(heartbeat("n1", "n2"), 100)).toBe("queued");
    expect(syncDelay(s.nodes.get("n1")!)).toBe(1);
  });

  it("the same stream injects the same faults", () => {
    const run = (): string[] => {
      const s = setup(DEFAULT_PROFILE.faultMix, { maxCrashed: 2 });
      for (let k = 0; k < 30; k++) s.injector.inject();
      return s.notes;
    };
    expect(run()).toEqual(run());
  });
});
