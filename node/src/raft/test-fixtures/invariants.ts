import type { MemoryStorage } from "../memory-storage.js";
import type { RaftNode } from "../raft-node.js";
import type { Entry, HardState, NodeId, Ready } from "../types.js";
import type { InMemoryRaftCluster, InMemoryRaftMember } from "./in-memory-raft-cluster.js";

/** The durable state a node will have once `rd` is persisted on top of `storage`. */
export class DurableView {
  readonly hardState: HardState;
  private readonly first: number;
  private readonly snapIndex: number | null;
  private readonly snapTerm: number;

  constructor(
    private readonly storage: MemoryStorage,
    private readonly rd: Ready,
  ) {
    this.hardState = rd.hardState ?? storage.initialState().hardState;
    this.first = rd.entries[0]?.index ?? Number.POSITIVE_INFINITY;
    this.snapIndex = rd.snapshot ? rd.snapshot.meta.index : null;
    this.snapTerm = rd.snapshot ? rd.snapshot.meta.term : 0;
  }

  termAt(index: number): number | null {
    if (this.snapIndex !== null) {
      if (index === this.snapIndex) return this.snapTerm;
      if (index < this.snapIndex) return null;
    }
    if (index >= this.first) return this.rd.entries[index - this.first]?.term ?? null;
    if (this.snapIndex !== null) return null;
    if (index > this.storage.lastIndex()) return null;
    try {
      return this.storage.term(index);
    } catch {
      return null;
    }
  }

  /** The index the snapshot covers (entries at or before it are not readable). */
  firstIndex(): number {
    return this.snapIndex !== null ? this.snapIndex + 1 : this.storage.firstIndex();
  }

  lastIndex(): number {
    const last = this.rd.entries[this.rd.entries.length - 1];
    if (last) return last.index;
    return this.snapIndex ?? this.storage.lastIndex();
  }
}

function entryKey(e: Entry): string {
  return `${e.term}/${e.type}/${Buffer.from(e.data).toString("hex")}`;
}

/**
 * Checks every Ready of an InMemoryRaftCluster (install `hook` as its `onReady`) against the Ready contract
 * and Raft's safety properties. Throws at the first violation, naming it.
 *
 * - persist-before-send: messages only reference entries, terms and votes that are durable once
 *   the Ready's own entries and hard state are persisted;
 * - an (index, term) is handed out in `entries` once unless it was truncated away in between;
 * - committed entries are durable, consecutive, each handed out once, and commit never decreases;
 * - term never decreases and a node never votes twice in one term;
 * - election safety: at most one leader per term;
 * - state machine safety: no two nodes apply different entries at one index;
 * - leader completeness: a new leader holds every entry applied anywhere.
 */
export class InvariantChecker {
  readonly leaders = new Map<number, NodeId>();
  /** index -> the entry some node applied there. */
  readonly applied = new Map<number, string>();
  private readonly handed = new Map<NodeId, Map<number, number>>();
  private readonly nextApply = new WeakMap<RaftNode, number>();
  /** Readys checked so far. */
  count = 0;

  readonly hook = (id: NodeId, rd: Ready, member: InMemoryRaftMember): void => this.check(id, rd, member);

  private fail(id: NodeId, what: string): never {
    throw new Error(`invariant violated at ${id} (ready #${this.count}): ${what}`);
  }

  check(id: NodeId, rd: Ready, member: InMemoryRaftMember): void {
    this.count++;
    const { storage, raft } = member;
    const view = new DurableView(storage, rd);
    const prevHard = storage.initialState().hardState;
    const hard = view.hardState;

    // Hard state monotonicity and single vote per term.
    if (hard.term < prevHard.term) this.fail(id, `term went back from ${prevHard.term} to ${hard.term}`);
    if (hard.term === prevHard.term && prevHard.vote !== null && hard.vote !== prevHard.vote) {
      this.fail(id, `vote changed from ${prevHard.vote} to ${hard.vote} within term ${hard.term}`);
    }
    if (hard.commit < prevHard.commit)
      this.fail(id, `commit went back from ${prevHard.commit} to ${hard.commit}`);
    if (hard.commit > view.lastIndex())
      this.fail(id, `commit ${hard.commit} beyond durable last index ${view.lastIndex()}`);

    // Entries handed out once.
    let handed = this.handed.get(id);
    if (!handed) {
      handed = new Map();
      this.handed.set(id, handed);
    }
    if (rd.snapshot) handed.clear();
    for (let i = 1; i < rd.entries.length; i++) {
      if (rd.entries[i]!.index !== rd.entries[i - 1]!.index + 1)
        this.fail(id, "Ready.entries not contiguous");
    }
    for (const e of rd.entries) {
      if (handed.get(e.index) === e.term) this.fail(id, `entry ${e.index}@${e.term} handed out twice`);
    }
    const firstNew = rd.entries[0]?.index;
    if (firstNew !== undefined) {
      for (const idx of [...handed.keys()]) if (idx >= firstNew) handed.delete(idx);
      for (const e of rd.entries) handed.set(e.index, e.term);
    }

    // Committed entries: durable, consecutive, once, and the same everywhere.
    let next = this.nextApply.get(raft) ?? raft.status().applied + 1;
    if (rd.snapshot) next = rd.snapshot.meta.index + 1;
    for (const e of rd.committedEntries) {
      if (e.index !== next) this.fail(id, `applied ${e.index}, expected ${next}`);
      next++;
      if (view.termAt(e.index) !== e.term) this.fail(id, `applied entry ${e.index}@${e.term} is not durable`);
      if (e.index > hard.commit) this.fail(id, `applied ${e.index} beyond commit ${hard.commit}`);
      const key = entryKey(e);
      const seen = this.applied.get(e.index);
      if (seen !== undefined && seen !== key) {
        this.fail(id, `state machine safety: index ${e.index} applied as ${key}, elsewhere as ${seen}`);
      }
      this.applied.set(e.index, key);
    }
    this.nextApply.set(raft, next);

    // Election safety and leader completeness.
    if (rd.softState?.role === "leader") {
      const other = this.leaders.get(rd.softState.term);
      if (other !== undefined && other !== id) {
        this.fail(id, `two leaders in term ${rd.softState.term}: ${other} and ${id}`);
      }
      this.leaders.set(rd.softState.term, id);
      for (const [index, key] of this.applied) {
        if (index < view.firstIndex()) continue;
        const term = Number(key.split("/")[0]);
        if (view.termAt(index) !== term) {
          this.fail(id, `leader completeness: new leader lacks applied entry ${index}@${term}`);
        }
      }
    }

    // Persist before send.
    for (const m of rd.messages) {
      if (m.from !== id) this.fail(id, `message from ${m.from} in ${id}'s Ready`);
      if (m.type !== "pre-vote" && m.type !== "pre-vote-response" && m.term > hard.term) {
        this.fail(id, `${m.type} at term ${m.term} sent before term ${m.term} is durable (${hard.term})`);
      }
      switch (m.type) {
        case "append":
          if (m.index > 0 && view.termAt(m.index) !== m.logTerm) {
            this.fail(id, `append to ${m.to} references prev ${m.index}@${m.logTerm} not durable`);
          }
          for (const e of m.entries) {
            if (view.termAt(e.index) !== e.term) {
              this.fail(id, `append to ${m.to} carries ${e.index}@${e.term} which is not durable`);
            }
          }
          if (m.commit > hard.commit)
            this.fail(id, `append carries commit ${m.commit} > durable ${hard.commit}`);
          break;
        case "append-response":
          if (!m.reject && m.index > view.lastIndex()) {
            this.fail(id, `append-response acknowledges ${m.index} beyond durable last ${view.lastIndex()}`);
          }
          break;
        // A vote sent in a term the node has durably left cannot be repeated: only the current
        // term's vote must be durable.
        case "vote":
          if (hard.term === m.term && hard.vote !== id) {
            this.fail(id, `vote request at term ${m.term} without a durable self-vote`);
          }
          if (view.termAt(m.index) !== m.logTerm && !(m.index === 0 && m.logTerm === 0)) {
            this.fail(id, `vote request claims last ${m.index}@${m.logTerm} not durable`);
          }
          break;
        case "vote-response":
          if (!m.reject && hard.term === m.term && hard.vote !== m.to) {
            this.fail(id, `vote granted to ${m.to} at term ${m.term} before the vote is durable`);
          }
          break;
        default:
          break;
      }
    }
  }
}

/** Log Matching over the durable logs: where two nodes hold the same (index, term), the prefixes agree. */
export function checkLogMatching(cluster: InMemoryRaftCluster): void {
  const logs = cluster.ids.map((id) => {
    const s = cluster.member(id).storage;
    const terms = new Map<number, number>();
    for (let i = s.firstIndex() - 1; i <= s.lastIndex(); i++) terms.set(i, s.term(i));
    return { id, terms };
  });
  for (const a of logs) {
    for (const b of logs) {
      if (a.id >= b.id) continue;
      let agreeFrom: number | null = null;
      for (const [index, term] of a.terms) {
        if (b.terms.get(index) === term) agreeFrom = Math.max(agreeFrom ?? 0, index);
      }
      if (agreeFrom === null) continue;
      for (const [index, term] of a.terms) {
        if (index > agreeFrom) continue;
        const other = b.terms.get(index);
        if (other !== undefined && other !== term) {
          throw new Error(`log matching: ${a.id} and ${b.id} agree at ${agreeFrom} but differ at ${index}`);
        }
      }
    }
  }
}
