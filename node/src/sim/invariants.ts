import type { Entry, HardState, NodeId } from "../raft/types.js";
import { entryDigest } from "./digest.js";

/**
 * The seven safety properties, the three membership adds (membership-invariants.ts), the one lazy
 * snapshots add (invariant-checks.ts) and the three of the command path (driver-command-clients.ts),
 * plus the three ways a run fails without breaking one of them.
 */
export type InvariantName =
  | "election-safety"
  | "log-matching"
  | "leader-completeness"
  | "state-machine-safety"
  | "monotonic-progress"
  | "acknowledged-write"
  | "linearizable-read"
  | "voters-only"
  | "one-change-at-a-time"
  | "snapshot-conf"
  | "snapshot-has-file"
  | "command-outcome"
  | "at-most-once"
  | "lane-fifo"
  | "reservations-released"
  | "liveness"
  | "core-contract";

export const SAFETY_INVARIANTS: readonly InvariantName[] = [
  "election-safety",
  "log-matching",
  "leader-completeness",
  "state-machine-safety",
  "monotonic-progress",
  "acknowledged-write",
  "linearizable-read",
  "voters-only",
  "one-change-at-a-time",
  "snapshot-conf",
  "snapshot-has-file",
  "command-outcome",
  "at-most-once",
  "lane-fifo",
];

/** Thrown by a check; the simulator adds the seed, the step and the trace. */
export class InvariantViolation extends Error {
  constructor(
    readonly invariant: InvariantName,
    readonly detail: string,
  ) {
    super(`${invariant}: ${detail}`);
    this.name = "InvariantViolation";
  }
}

/** `termAt` answer for an index the node no longer holds because a snapshot covers it. */
export const COMPACTED = -1;

/** Terms stay far below this in any run, so (index, term) packs into one exact double. */
const TERM_SPAN = 2 ** 21;

/**
 * The cluster-wide record the invariants are checked against. Every method looks only at what the
 * step just changed, so checking after each step costs O(entries touched), not O(log length).
 *
 * The committed log is what nodes applied: an entry is committed once any node applies it, and every
 * later application at that index must agree. Each committed index also keeps an upper bound on the
 * term it was committed in (the smallest term of a node applying it, since a node only learns a
 * commit index from a leader of its current term or earlier); leaders of later terms must hold it.
 */
export class SafetyChecker {
  private readonly leaders = new Map<number, NodeId>();
  private readonly logDigests = new Map<number, number>();
  private readonly logPrevTerms = new Map<number, number>();
  private readonly committedTerms: number[] = [0];
  private readonly committedDigests: number[] = [0];
  private readonly committedChains: number[] = [0];
  private readonly commitTermBounds: number[] = [0];
  private maxAckedIndex = 0;

  get committedIndex(): number {
    return this.committedTerms.length - 1;
  }

  /** The highest index of an acknowledged write so far. */
  get maxAcked(): number {
    return this.maxAckedIndex;
  }

  /** Invariant 1: at most one leader per term. Returns true the first time this term gets its leader. */
  observeLeader(node: NodeId, term: number): boolean {
    const existing = this.leaders.get(term);
    if (existing === undefined) {
      this.leaders.set(term, node);
      return true;
    }
    if (existing !== node) fail("election-safety", `${node} and ${existing} are both leader of term ${term}`);
    return false;
  }

  /**
   * A node is about to persist `next` over its durable `previous`. The term never goes back, a vote
   * once cast in a term never changes (a second vote is how a term gets two leaders) and the commit
   * index never goes back, across restarts included.
   */
  observeHardState(node: NodeId, previous: HardState, next: HardState): void {
    if (next.term < previous.term) {
      fail("monotonic-progress", `${node} persists term ${next.term} over term ${previous.term}`);
    }
    if (next.term === previous.term && previous.vote !== null && next.vote !== previous.vote) {
      fail(
        "election-safety",
        `${node} changes its vote in term ${next.term} from ${previous.vote} to ${next.vote}`,
      );
    }
    if (next.commit < previous.commit) {
      fail("monotonic-progress", `${node} persists commit ${next.commit} over commit ${previous.commit}`);
    }
  }

  /**
   * Invariant 2 (log matching), by induction: each (index, term) must always name the same content
   * and follow the same previous term, so two logs agreeing on one entry agree on everything before it.
   * Checks `entries` from position `from`; `prevTerm` is the term of the entry just before that one.
   */
  observeAppend(node: NodeId, entries: readonly Entry[], from: number, prevTerm: number): void {
    let prev = prevTerm;
    for (let k = from; k < entries.length; k++) {
      const e = entries[k]!;
      if (e.term < prev) {
        fail("log-matching", `${node} appends ${e.index}/t${e.term} after an entry of term ${prev}`);
      }
      const key = e.index * TERM_SPAN + e.term;
      const digest = entryDigest(e);
      const known = this.logDigests.get(key);
      if (known === undefined) {
        this.logDigests.set(key, digest);
        this.logPrevTerms.set(key, prev);
      } else if (known !== digest) {
        fail("log-matching", `${node} holds a different entry at ${e.index}/t${e.term} than another log did`);
      } else if (this.logPrevTerms.get(key) !== prev) {
        fail(
          "log-matching",
          `${node} holds ${e.index}/t${e.term} after term ${prev}, another log after term ${this.logPrevTerms.get(key)}`,
        );
      }
      prev = e.term;
    }
  }

  /**
   * Invariant 3: a leader of `term` holds every entry committed in an earlier term. `termAt` answers
   * from the leader's log (`undefined` when it cannot tell, `COMPACTED` under its snapshot, which only
   * covers what it applied and invariant 4 checks); `lastIndex` is the end of its log.
   */
  checkLeaderLog(
    node: NodeId,
    term: number,
    lastIndex: number,
    termAt: (index: number) => number | undefined,
  ): void {
    const committed = this.committedIndex;
    for (let i = 1; i <= committed; i++) {
      if (this.commitTermBounds[i]! >= term) continue;
      const want = this.committedTerms[i]!;
      if (i > lastIndex) {
        fail(
          "leader-completeness",
          `${node} became leader of term ${term} with last index ${lastIndex}, missing committed ${i}/t${want}`,
        );
      }
      const have = termAt(i);
      if (have === undefined || have === COMPACTED) continue;
      if (have !== want) {
        fail(
          "leader-completeness",
          `${node} became leader of term ${term} holding ${i}/t${have}, but ${i}/t${want} was committed by term ${this.commitTermBounds[i]}`,
        );
      }
    }
  }

  /**
   * Invariant 4: no two nodes apply different entries at one index. `chain` is the applying node's
   * digest of its whole applied prefix, so a divergence hidden inside an installed snapshot shows too.
   * `termBound` is the node's current term.
   */
  observeApply(node: NodeId, entry: Entry, digest: number, chain: number, termBound: number): void {
    const i = entry.index;
    const committed = this.committedIndex;
    if (i === committed + 1) {
      this.committedTerms.push(entry.term);
      this.committedDigests.push(digest);
      this.committedChains.push(chain);
      this.commitTermBounds.push(termBound);
      return;
    }
    if (i > committed + 1) {
      fail("state-machine-safety", `${node} applies ${i} while nothing beyond ${committed} was ever applied`);
    }
    if (this.committedTerms[i] !== entry.term || this.committedDigests[i] !== digest) {
      fail(
        "state-machine-safety",
        `${node} applies ${i}/t${entry.term} but ${i}/t${this.committedTerms[i]} was applied before with other content`,
      );
    }
    if (this.committedChains[i] !== chain) {
      fail("state-machine-safety", `${node} applied a different prefix before index ${i} than other nodes`);
    }
    if (termBound < this.commitTermBounds[i]!) this.commitTermBounds[i] = termBound;
  }

  /** A node's state machine was rebuilt from a snapshot at `index`: it must equal that applied prefix. */
  observeRestore(node: NodeId, index: number, term: number, chain: number): void {
    if (index === 0) return;
    if (index > this.committedIndex) {
      fail(
        "state-machine-safety",
        `${node} restores a snapshot at ${index}, beyond anything applied (${this.committedIndex})`,
      );
    }
    if (this.committedTerms[index] !== term || this.committedChains[index] !== chain) {
      fail(
        "state-machine-safety",
        `${node} restores a snapshot at ${index}/t${term} that differs from the applied prefix`,
      );
    }
  }

  /** Whether the committed entry at `index` is (term, digest); false when nothing is committed there. */
  isCommitted(index: number, term: number, digest: number): boolean {
    return this.committedTerms[index] === term && this.committedDigests[index] === digest;
  }

  /** Invariant 6: the proposer applied its proposal at the (index, term) it was promised. */
  observeAck(node: NodeId, index: number, term: number, digest: number): void {
    if (!this.isCommitted(index, term, digest)) {
      fail(
        "acknowledged-write",
        `${node} acknowledged ${index}/t${term} but that is not the committed entry there`,
      );
    }
    if (index > this.maxAckedIndex) this.maxAckedIndex = index;
  }

  /** Invariant 7: a read confirmed at `index` sees every write committed before it was issued. */
  observeReadState(node: NodeId, requestId: string, index: number, minIndex: number): void {
    if (index < minIndex) {
      fail(
        "linearizable-read",
        `${node} confirmed read ${requestId} at index ${index}, but ${minIndex} had committed (and applied) before it was issued`,
      );
    }
  }

  /** At the end, a node's state machine must hold every acknowledged write and the common prefix. */
  checkFinal(node: NodeId, applied: number, chain: number): void {
    if (applied < this.maxAckedIndex) {
      fail(
        "acknowledged-write",
        `${node} ends at ${applied} without the acknowledged write at ${this.maxAckedIndex}`,
      );
    }
    if (this.committedChains[applied] !== chain) {
      fail("state-machine-safety", `${node} ends with a different applied prefix at ${applied}`);
    }
  }
}

function fail(invariant: InvariantName, detail: string): never {
  throw new InvariantViolation(invariant, detail);
}
