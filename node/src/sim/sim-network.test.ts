import { describe, expect, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import type { Message, NodeId } from "../raft/types.js";
import { type NetworkFaults, SimNetwork } from "./sim-network.js";

const NODES = ["a", "b", "c"];
const PERFECT: NetworkFaults = {
  dropRate: 0,
  duplicateRate: 0,
  minDelay: 5,
  maxDelay: 5,
  spikeRate: 0,
  spikeDelay: 0,
};

function heartbeat(from: NodeId, to: NodeId, commit = 0): Message {
  return { type: "heartbeat", from, to, term: 1, commit, readRound: 0 };
}

function network(faults: Partial<NetworkFaults> = {}, seed = 1): SimNetwork {
  return new SimNetwork(NODES, new SeededRandom(seed), { ...PERFECT, ...faults });
}

/** Everything the network delivers, in order, as "from->to@time" (or "cut" when lost on the wire). */
function drain(net: SimNetwork): string[] {
  const out: string[] = [];
  for (let d = net.next(); d !== undefined; d = net.next()) {
    out.push(`${d.message.from}->${d.message.to}@${d.at}${d.cut ? " cut" : ""}`);
  }
  return out;
}

describe("SimNetwork", () => {
  it("delivers after the delay, in time order", () => {
    const net = network();
    expect(net.send(heartbeat("a", "b"), 10)).toBe("queued");
    expect(net.send(heartbeat("b", "c"), 3)).toBe("queued");
    expect(net.nextTime()).toBe(8);
    expect(drain(net)).toEqual(["b->c@8", "a->b@15"]);
    expect(net.nextTime()).toBe(Number.POSITIVE_INFINITY);
  });

  it("a one-way cut blocks one direction only", () => {
    const net = network();
    net.cut("a", "b");
    expect(net.isCut("a", "b")).toBe(true);
    expect(net.isCut("b", "a")).toBe(false);
    expect(net.send(heartbeat("a", "b"), 0)).toBe("cut");
    expect(net.send(heartbeat("b", "a"), 0)).toBe("queued");
    expect(net.send(heartbeat("a", "c"), 0)).toBe("queued");
    expect(drain(net)).toEqual(["b->a@5", "a->c@5"]);
  });

  it("isolating a node cuts every link into and out of it", () => {
    const net = network();
    net.isolate("c");
    for (const other of ["a", "b"]) {
      expect(net.isCut("c", other)).toBe(true);
      expect(net.isCut(other, "c")).toBe(true);
    }
    expect(net.isCut("a", "b")).toBe(false);
    expect(net.isCut("b", "a")).toBe(false);
  });

  it("loses messages that are on the wire when their link is cut", () => {
    const net = network();
    net.send(heartbeat("a", "b"), 0);
    net.send(heartbeat("b", "a"), 0);
    net.cut("a", "b");
    expect(drain(net)).toEqual(["a->b@5 cut", "b->a@5"]);
  });

  it("overlapping partitions heal independently", () => {
    const net = network();
    const first = net.isolate("a");
    const second = net.cut("a", "b");
    net.restore(first);
    expect(net.isCut("a", "b")).toBe(true);
    expect(net.isCut("b", "a")).toBe(false);
    expect(net.isCut("a", "c")).toBe(false);
    net.restore(second);
    expect(net.isCut("a", "b")).toBe(false);
  });

  it("heal restores every link", () => {
    const net = network();
    net.isolate("a");
    net.cut("b", "c");
    net.heal();
    for (const from of NODES) {
      for (const to of NODES) if (from !== to) expect(net.isCut(from, to)).toBe(false);
    }
  });

  it("connects a node that joins later to every other; partitions made before leave it reachable", () => {
    const net = network();
    net.isolate("a");
    expect(() => net.isCut("d", "b")).toThrow();
    expect(() => net.send(heartbeat("b", "d"), 0)).toThrow();
    net.addNode("d");
    expect(() => net.addNode("d")).toThrow();
    expect(net.isCut("a", "d")).toBe(false);
    expect(net.send(heartbeat("d", "b"), 0)).toBe("queued");
    net.isolate("d");
    expect(net.isCut("d", "a")).toBe(true);
    expect(net.isCut("c", "d")).toBe(true);
    expect(drain(net)).toEqual(["d->b@5 cut"]);
    net.heal();
    expect(net.isCut("a", "b")).toBe(false);
    expect(net.isCut("c", "d")).toBe(false);
  });

  it("drops and duplicates at the configured rates", () => {
    const dropAll = network({ dropRate: 1 });
    expect(dropAll.send(heartbeat("a", "b"), 0)).toBe("dropped");
    expect(dropAll.pending).toBe(0);

    const duplicateAll = network({ duplicateRate: 1 });
    expect(duplicateAll.send(heartbeat("a", "b"), 0)).toBe("duplicated");
    expect(drain(duplicateAll)).toEqual(["a->b@5", "a->b@5"]);
  });

  it("jittered delays reorder messages on one link", () => {
    const net = network({ minDelay: 1, maxDelay: 20 });
    for (let i = 0; i < 50; i++) net.send(heartbeat("a", "b", i), 0);
    const commits: number[] = [];
    for (let d = net.next(); d !== undefined; d = net.next()) {
      if (d.message.type === "heartbeat") commits.push(d.message.commit);
    }
    expect(commits).toHaveLength(50);
    expect(commits).not.toEqual([...commits].sort((x, y) => x - y));
  });

  it("the same seed makes the same choices", () => {
    const run = (seed: number): string[] => {
      const net = network(
        { dropRate: 0.3, duplicateRate: 0.3, minDelay: 1, maxDelay: 9, spikeRate: 0.2, spikeDelay: 50 },
        seed,
      );
      for (let i = 0; i < 40; i++) net.send(heartbeat(NODES[i % 3]!, NODES[(i + 1) % 3]!), i);
      return drain(net);
    };
    expect(run(7)).toEqual(run(7));
    expect(run(7)).not.toEqual(run(8));
  });
});
