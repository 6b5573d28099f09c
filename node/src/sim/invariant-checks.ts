import type {
  ConfState,
  Entry,
  Message,
  NodeId,
  RaftStatus,
  Snapshot,
  SnapshotChunkMessage,
} from "../raft/index.js";
import { type DurableLog, durableCopies } from "./durable-quorum.js";
import type { SafetyChecker } from "./invariants.js";
import type { NodeRegistry, SimNode } from "./node-registry.js";
import { fail } from "./sim-failure.js";

/**
 * The checks the driver makes outside a Ready (those are in ready-checks.ts): on a core's new status,
 * on what it applies and sends, and on the cluster it converged to. Each throws InvariantViolation.
 */

/**
 * Readys without committed entries a core may hand out in one step. Paging a long committed backlog
 * takes as many Readys as it needs; anything else repeating this often is a loop, not work.
 */
export const MAX_IDLE_READYS_PER_STEP = 64;

/** `idle` counts the Readys without committed entries the core handed out in this step so far. */
export function checkIdleReadys(node: SimNode, idle: number): void {
  if (idle > MAX_IDLE_READYS_PER_STEP) {
    fail(
      "core-contract",
      `${node.id} keeps handing out Readys: ${idle} without entries to apply in one step`,
    );
  }
}

/**
 * A core's new status `s` against the commit index it had in this life (`node.commit`): the index
 * never goes back, and a leader commits only what a majority of its voters' disks hold.
 */
export function checkCommitProgress(
  node: SimNode,
  s: RaftStatus,
  diskOf: (id: NodeId) => DurableLog | null,
): void {
  if (s.commit < node.commit) {
    fail("monotonic-progress", `${node.id} commit index went back from ${node.commit} to ${s.commit}`);
  }
  if (s.role === "leader" && s.commit > node.commit) checkCommitDurable(node.id, s, diskOf);
}

/** A leader with status `s` commits only what a majority of its voters' disks hold. */
export function checkCommitDurable(
  id: NodeId,
  s: RaftStatus,
  diskOf: (id: NodeId) => DurableLog | null,
): void {
  const { voters } = s.conf;
  const copies = durableCopies(voters, diskOf, s.commit);
  if (copies <= voters.length / 2) {
    fail(
      "leader-completeness",
      `${id} commits ${s.commit}, which only ${copies} disk(s) hold of its ${voters.length} voters [${voters.join(", ")}]`,
    );
  }
}

/**
 * A leader's match for a follower never goes back within its term: an acknowledged entry is on the
 * follower's disk, and no disk the simulator loses comes back under its ID. A leader that lowers it
 * took a late answer for news and resends what the follower holds.
 */
export function checkMatchProgress(node: SimNode, before: RaftStatus | null, s: RaftStatus): void {
  if (before === null || before.role !== "leader" || s.role !== "leader" || before.term !== s.term) return;
  for (const [id, pr] of Object.entries(s.progress)) {
    const was = before.progress[id]?.match ?? 0;
    if (pr.match < was) {
      fail(
        "monotonic-progress",
        `${node.id} lowered its match for ${id} from ${was} to ${pr.match} in term ${s.term}`,
      );
    }
  }
}

/** The next entry to apply follows the last one applied and is committed as the node knows it. */
export function checkApplyOrder(node: SimNode, e: Entry): void {
  const applied = node.state.live.applied;
  if (e.index !== applied + 1) {
    fail("monotonic-progress", `${node.id} applies ${e.index} right after ${applied}`);
  }
  if (e.index > node.commit)
    fail("core-contract", `${node.id} applies ${e.index} beyond its commit ${node.commit}`);
}

/** A core sends only as itself, never to itself, and only to nodes that exist. */
export function checkSend(node: SimNode, m: Message, known: (id: NodeId) => boolean): void {
  if (m.from !== node.id || m.to === node.id || !known(m.to)) {
    fail("core-contract", `${node.id} sends a ${m.type} from ${m.from} to ${m.to}`);
  }
}

/**
 * A leader streams only a snapshot that has a file: never one of a point its storage took and made no
 * copy at (lazy snapshots), which has no bytes to send.
 */
export function checkSnapshotSent(node: SimNode, m: SnapshotChunkMessage): void {
  if (node.disk.storage.isBarePoint(m.meta.index, m.meta.term)) {
    fail(
      "snapshot-has-file",
      `${node.id} sends snapshot ${m.meta.index}/t${m.meta.term}, a point it has no file of, to ${m.to}`,
    );
  }
}

/** A snapshot a node installs is a file that another node recorded, never a point's metadata. */
export function checkSnapshotInstalled(node: SimNode, snapshot: Snapshot, nodes: NodeRegistry): void {
  const { meta, checksum } = snapshot;
  if (!nodes.all.some((n) => n !== node && n.disk.storage.hasFile(meta, checksum))) {
    fail(
      "snapshot-has-file",
      `${node.id} installs snapshot ${meta.index}/t${meta.term}, which no other node has a file of`,
    );
  }
}

/** A snapshot of the state machine is taken at an entry the node still holds as it applied it. */
export function checkAppliedOnDisk(node: SimNode): void {
  const storage = node.disk.storage;
  const sm = node.state.live;
  if (sm.applied > storage.lastIndex() || storage.term(sm.applied) !== sm.term) {
    fail(
      "state-machine-safety",
      `${node.id} no longer holds its applied entry ${sm.applied}/t${sm.term} on disk`,
    );
  }
}

/**
 * Every member of the converged configuration `conf` applied the whole committed log: converging on
 * a log that lacks an acknowledged write is a lost write, not a liveness failure.
 */
export function checkConverged(checker: SafetyChecker, nodes: NodeRegistry, conf: ConfState): void {
  for (const id of [...conf.voters, ...(conf.learners ?? [])]) {
    const sm = nodes.get(id)!.state.live;
    checker.checkFinal(id, sm.applied, sm.digest);
  }
}
