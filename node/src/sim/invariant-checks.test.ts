import { describe, expect, it } from "vitest";
import { crc32c } from "../checksum/crc32c.js";
import type { Entry, Message, RaftStatus, Snapshot, SnapshotChunkMessage } from "../raft/index.js";
import { entryDigest } from "./digest.js";
import {
  checkAppliedOnDisk,
  checkApplyOrder,
  checkCommitProgress,
  checkConverged,
  checkIdleReadys,
  checkSend,
  checkSnapshotInstalled,
  checkSnapshotSent,
  MAX_IDLE_READYS_PER_STEP,
} from "./invariant-checks.js";
import { type InvariantName, InvariantViolation, SafetyChecker } from "./invariants.js";
import { INITIAL_VOTERS, type NodeRegistry, type SimNode } from "./node-registry.js";
import { testNodeRegistry } from "./test-fixtures/test-node-registry.js";

/** Three bootstrapped voters: each disk holds the bootstrap entry 1/t1. */
function cluster(lazySnapshots = 0): { nodes: NodeRegistry; n1: SimNode; n2: SimNode; n3: SimNode } {
  const nodes = testNodeRegistry(undefined, lazySnapshots);
  const [n1, n2, n3] = INITIAL_VOTERS.map(() => nodes.create(INITIAL_VOTERS));
  return { nodes, n1: n1!, n2: n2!, n3: n3! };
}

function status(over: Partial<RaftStatus>): RaftStatus {
  return {
    id: "n1",
    term: 2,
    vote: null,
    commit: 1,
    applied: 1,
    role: "follower",
    leader: null,
    lastIndex: 1,
    transferee: null,
    leaderCommit: 0,
    conf: { voters: [...INITIAL_VOTERS] },
    progress: {},
    ...over,
  };
}

function entry(index: number, term: number, text = `e${index}`): Entry {
  return { index, term, type: "normal", data: new TextEncoder().encode(text) };
}

/** The invariant `check` breaks, or null when it passes. */
function broken(check: () => void): InvariantName | null {
  try {
    check();
    return null;
  } catch (error) {
    if (error instanceof InvariantViolation) return error.invariant;
    throw error;
  }
}

describe("invariant checks", () => {
  it("a commit index never goes back within one life", () => {
    const { nodes, n1 } = cluster();
    n1.commit = 3;
    const diskOf = (id: string) => nodes.diskOf(id);
    expect(broken(() => checkCommitProgress(n1, status({ commit: 2 }), diskOf))).toBe("monotonic-progress");
    expect(broken(() => checkCommitProgress(n1, status({ commit: 3 }), diskOf))).toBeNull();
  });

  it("a leader commits only what a majority of its voters' disks hold", () => {
    const { nodes, n1, n2 } = cluster();
    const diskOf = (id: string) => nodes.diskOf(id);
    n1.commit = 1;
    n1.disk.storage.append([entry(2, 2)]);
    const leader = status({ role: "leader", commit: 2, lastIndex: 2 });
    expect(broken(() => checkCommitProgress(n1, leader, diskOf))).toBe("leader-completeness");
    // A follower learns the commit index from its leader: nothing to count on its side.
    expect(broken(() => checkCommitProgress(n1, status({ commit: 2 }), diskOf))).toBeNull();
    n2.disk.storage.append([entry(2, 2)]);
    expect(broken(() => checkCommitProgress(n1, leader, diskOf))).toBeNull();
    // Half of an even number of voters is no majority.
    const n4 = nodes.create(null);
    const four = { voters: [...INITIAL_VOTERS, n4.id] };
    expect(broken(() => checkCommitProgress(n1, { ...leader, conf: four }, diskOf))).toBe(
      "leader-completeness",
    );
  });

  it("entries are applied in order and only once committed", () => {
    const { n1 } = cluster();
    n1.commit = 2;
    expect(broken(() => checkApplyOrder(n1, entry(2, 1)))).toBe("monotonic-progress");
    expect(broken(() => checkApplyOrder(n1, entry(1, 1)))).toBeNull();
    n1.state.live.apply(entry(1, 1));
    n1.state.live.apply(entry(2, 1));
    expect(broken(() => checkApplyOrder(n1, entry(3, 1)))).toBe("core-contract");
  });

  it("a core sends as itself, to another node that exists", () => {
    const { n1 } = cluster();
    const known = (id: string) => ["n1", "n2", "n3"].includes(id);
    const m = (from: string, to: string): Message => ({
      type: "heartbeat",
      from,
      to,
      term: 1,
      commit: 0,
      readRound: 0,
    });
    expect(broken(() => checkSend(n1, m("n1", "n2"), known))).toBeNull();
    expect(broken(() => checkSend(n1, m("n2", "n3"), known))).toBe("core-contract");
    expect(broken(() => checkSend(n1, m("n1", "n1"), known))).toBe("core-contract");
    expect(broken(() => checkSend(n1, m("n1", "n9"), known))).toBe("core-contract");
  });

  it(`a core may hand out ${MAX_IDLE_READYS_PER_STEP} Readys without entries in a step, not more`, () => {
    const { n1 } = cluster();
    expect(broken(() => checkIdleReadys(n1, MAX_IDLE_READYS_PER_STEP))).toBeNull();
    expect(broken(() => checkIdleReadys(n1, MAX_IDLE_READYS_PER_STEP + 1))).toBe("core-contract");
  });

  it("a snapshot is taken only of an applied entry the disk still holds as applied", () => {
    const { n1 } = cluster();
    n1.state.live.apply(entry(1, 1));
    expect(broken(() => checkAppliedOnDisk(n1))).toBeNull();
    n1.state.live.apply(entry(2, 3));
    expect(broken(() => checkAppliedOnDisk(n1))).toBe("state-machine-safety");
    n1.disk.storage.append([entry(2, 2)]);
    expect(broken(() => checkAppliedOnDisk(n1))).toBe("state-machine-safety");
  });

  it("a leader streams a snapshot only from a file, never a point it made no copy at", () => {
    const { n1 } = cluster(1);
    const storage = n1.disk.storage;
    storage.append([entry(2, 1), entry(3, 2)]);
    const conf = { voters: [...INITIAL_VOTERS] };
    const sent = (index: number, term: number, checksum = 0): SnapshotChunkMessage => ({
      type: "snapshot-chunk",
      from: "n1",
      to: "n2",
      term: 2,
      meta: { index, term, conf },
      offset: 0,
      length: 0,
      totalBytes: 0,
      checksum,
      data: null,
      epoch: 0,
    });
    storage.takeSnapshot(2, conf, () => new Uint8Array());
    expect(broken(() => checkSnapshotSent(n1, sent(2, 1)))).toBe("snapshot-has-file");
    // A copy beyond the point is a file; the point stays bare.
    storage.snapshot();
    const copy = storage.materialize(3, conf, new Uint8Array([3]));
    expect(broken(() => checkSnapshotSent(n1, sent(3, 2, copy.checksum)))).toBeNull();
    expect(broken(() => checkSnapshotSent(n1, sent(2, 1)))).toBe("snapshot-has-file");
  });

  it("a node installs only a snapshot another node has a file of", () => {
    const { n1, n2, n3, nodes } = cluster(1);
    const conf = { voters: [...INITIAL_VOTERS] };
    n1.disk.storage.append([entry(2, 1), entry(3, 2)]);
    n1.disk.storage.takeSnapshot(3, conf, () => new Uint8Array());
    const point: Snapshot = { meta: n1.disk.storage.snapshotMeta(), size: 0, checksum: 0 };
    expect(broken(() => checkSnapshotInstalled(n2, point, nodes))).toBe("snapshot-has-file");
    n1.disk.storage.snapshot();
    const copy = n1.disk.storage.materialize(3, conf, new Uint8Array([3]));
    expect(broken(() => checkSnapshotInstalled(n2, copy, nodes))).toBeNull();
    // What the installing node recorded itself, on receiving it, vouches for nothing.
    const data = new Uint8Array([5]);
    const unknown: Snapshot = { meta: { index: 5, term: 2, conf }, size: 1, checksum: crc32c(data) };
    n3.disk.storage.applySnapshot(unknown, data);
    expect(broken(() => checkSnapshotInstalled(n3, unknown, nodes))).toBe("snapshot-has-file");
  });

  it("at the end every member, learners included, holds the acknowledged writes", () => {
    const { nodes, n1, n2, n3 } = cluster();
    const learner = nodes.create(null);
    const checker = new SafetyChecker();
    const e1 = entry(1, 1);
    for (const node of [n1, n2, n3, learner]) {
      const sm = node.state.live;
      sm.apply(e1);
      checker.observeApply(node.id, e1, entryDigest(e1), sm.digest, 1);
    }
    const e2 = entry(2, 1);
    for (const node of [n1, n2, n3]) {
      const sm = node.state.live;
      sm.apply(e2);
      checker.observeApply(node.id, e2, entryDigest(e2), sm.digest, 1);
    }
    checker.observeAck("n1", 2, 1, entryDigest(e2));
    const voters = [...INITIAL_VOTERS];
    expect(broken(() => checkConverged(checker, nodes, { voters }))).toBeNull();
    expect(broken(() => checkConverged(checker, nodes, { voters, learners: [learner.id] }))).toBe(
      "acknowledged-write",
    );
  });
});
