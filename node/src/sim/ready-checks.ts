import type { Entry, RaftStatus, Ready, Snapshot } from "../raft/index.js";
import { type InvariantName, InvariantViolation, type SafetyChecker } from "./invariants.js";
import { termsWithReady } from "./leader-log-view.js";
import { changesAfter, type MembershipChecker } from "./membership-invariants.js";
import type { SimNode } from "./node-registry.js";

/**
 * Checks a Ready before any of it reaches the disk: the hard state and snapshot it persists, the
 * entries it appends and, from a leader, the log it leads with and the membership changes in it.
 * `node.status` is the core's status as of this Ready.
 */
export function checkReady(
  node: SimNode,
  rd: Ready,
  checker: SafetyChecker,
  membership: MembershipChecker,
): void {
  if (rd.hardState !== null) checker.observeHardState(node.id, node.durable, rd.hardState);
  const storage = node.disk.storage;
  if (rd.snapshot !== null) {
    const index = rd.snapshot.meta.index;
    // A point counts: the log is compacted behind it and the state machine durable there.
    const stored = storage.snapshotMeta().index;
    if (index <= stored) {
      fail(
        "core-contract",
        `${node.id} asks to install snapshot ${index} over its stored snapshot ${stored}`,
      );
    }
    const applied = node.state.live.applied;
    if (index < applied) {
      fail("monotonic-progress", `${node.id} installs snapshot ${index} after applying ${applied}`);
    }
  }
  if (rd.entries.length > 0) checkEntries(node, rd.entries, rd.snapshot, checker);
  const s = node.status!;
  if (s.role !== "leader") return;
  const newTerm = s.term > node.checkedLeaderTerm;
  if (newTerm) {
    node.checkedLeaderTerm = s.term;
    checkLeaderLog(node, rd, s, checker);
  }
  if (newTerm || rd.entries.some((e) => e.type === "conf")) {
    const pending = changesAfter(checker.committedIndex, storage, rd.entries);
    membership.checkUncommittedChanges(node.id, s.term, pending);
  }
}

function checkEntries(
  node: SimNode,
  entries: readonly Entry[],
  snapshot: Snapshot | null,
  checker: SafetyChecker,
): void {
  const storage = node.disk.storage;
  const first = entries[0]!.index;
  for (let k = 1; k < entries.length; k++) {
    if (entries[k]!.index !== first + k)
      fail("core-contract", `${node.id} appends entries with a gap at ${first + k}`);
  }
  // The entries land after the Ready's snapshot if it has one, else on the stored log.
  const base = snapshot !== null ? snapshot.meta.index : storage.firstIndex() - 1;
  const last = snapshot !== null ? snapshot.meta.index : storage.lastIndex();
  if (first > last + 1) fail("core-contract", `${node.id} appends at ${first} after its last index ${last}`);
  // Storage skips entries its snapshot already covers.
  const from = Math.max(0, base + 1 - first);
  if (from >= entries.length) return;
  const start = first + from;
  const prevTerm = snapshot !== null ? snapshot.meta.term : storage.term(start - 1);
  if (snapshot === null) {
    const overlapEnd = Math.min(storage.lastIndex(), first + entries.length - 1);
    for (let i = start; i <= overlapEnd; i++) {
      const old = storage.term(i);
      const replacement = entries[i - first]!.term;
      if (old === replacement) continue;
      if (i <= node.durable.commit) {
        fail(
          "leader-completeness",
          `${node.id} overwrites committed ${i}/t${old} with a term ${replacement} entry (its commit is ${node.durable.commit})`,
        );
      }
      break;
    }
  }
  checker.observeAppend(node.id, entries, from, prevTerm);
}

/** The log a new leader has: its disk, overlaid with the snapshot and entries of this Ready. */
function checkLeaderLog(node: SimNode, rd: Ready, s: RaftStatus, checker: SafetyChecker): void {
  checker.checkLeaderLog(node.id, s.term, s.lastIndex, termsWithReady(rd, node.disk.storage));
}

function fail(invariant: InvariantName, detail: string): never {
  throw new InvariantViolation(invariant, detail);
}
