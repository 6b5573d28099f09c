import { UnknownWriteOutcomeError } from "@keyload/contract";
import type { Entry } from "../raft/types.js";
import type { ApplyResult } from "../state/apply-result.js";
import { overwritten } from "./proposal-errors.js";

interface ProposalWaiter {
  readonly term: number;
  readonly resolve: (result: ApplyResult) => void;
  readonly reject: (error: Error) => void;
}

/** Who is told when the last entry of a proposed batch commits (see add). */
interface CommitNotice {
  readonly lastIndex: number;
  readonly term: number;
  /** True when the proposer is about to propose more, which the leader then sends before applying. */
  readonly notify: () => boolean;
  /** Stops listening to the proposal's abort signal. */
  readonly detach: () => void;
  /** The last index of the entries whose results go ahead of the batch (EntriesAhead), or 0. */
  readonly aheadUpTo: number;
}

/** The first `count` entries of a batch, whose results `settle` hears as soon as each is applied. */
export interface EntriesAhead {
  readonly count: number;
  readonly settle: (index: number, result: ApplyResult) => void;
}

/** What the commits of one Ready mean for the proposers (see noticeCommits). */
export interface CommitsNoticed {
  /** A proposer has more to propose at once, which the leader then sends before applying. */
  readonly more: boolean;
  /** The last committed index whose entry a proposer wants applied at once (EntriesAhead), or 0. */
  readonly aheadUpTo: number;
}

const NOTHING_NOTICED: CommitsNoticed = { more: false, aheadUpTo: 0 };

/**
 * The proposals waiting for their entries' apply results, by log index, and the proposers waiting to
 * hear that their batch committed. An entry counts as a proposal's only when it carries the term it
 * was proposed at: any other term there means another leader overwrote it.
 */
export class ProposalWaiters {
  private readonly waiters = new Map<number, ProposalWaiter>();
  /** In proposal order, so in index order. */
  private notices: CommitNotice[] = [];

  /**
   * Waits for the apply results of `count` entries proposed at `term` from index `first`. `signal`
   * cuts the wait short with UnknownWriteOutcome; `committed` is called when the last of them
   * commits as proposed (see noticeCommits); `ahead` hears its entries' results as each is settled.
   */
  add(
    first: number,
    count: number,
    term: number,
    signal?: AbortSignal,
    committed?: () => boolean,
    ahead?: EntriesAhead,
  ): Promise<ApplyResult[]> {
    const aheadCount = Math.min(ahead?.count ?? 0, count);
    const all = Promise.all(
      Array.from(
        { length: count },
        (_, i) =>
          new Promise<ApplyResult>((resolve, reject) => {
            const onResult =
              ahead !== undefined && i < aheadCount
                ? (result: ApplyResult): void => {
                    resolve(result);
                    ahead.settle(i, result);
                  }
                : resolve;
            this.wait(first + i, { term, resolve: onResult, reject });
          }),
      ),
    );
    let detach = (): void => undefined;
    if (signal) {
      const onAbort = (): void => {
        for (let i = 0; i < count; i++) {
          const w = this.waiters.get(first + i);
          if (w && w.term === term) {
            this.waiters.delete(first + i);
            w.reject(
              new UnknownWriteOutcomeError("the replication deadline passed", {
                reason: "ReplicationDeadline",
              }),
            );
          }
        }
      };
      if (signal.aborted) onAbort();
      else {
        signal.addEventListener("abort", onAbort, { once: true });
        // Removed once settled, or committed (the deadline is over then), so the caller can reuse a
        // signal nobody listens to any more.
        detach = (): void => signal.removeEventListener("abort", onAbort);
        all.then(detach, detach);
      }
    }
    if (count > 0) this.dropOverwrittenNotices(first, term);
    if (committed && count > 0) {
      this.notices.push({
        lastIndex: first + count - 1,
        term,
        notify: committed,
        detach,
        aheadUpTo: aheadCount > 0 ? first + aheadCount - 1 : 0,
      });
    }
    return all;
  }

  /**
   * A proposal at an index that already has one: the earlier (an older term's, whose entry a later
   * leader cut from this log before this node led again) can no longer commit there, and nothing else
   * would ever settle it, not even its deadline, which leaves waiters of another term alone.
   */
  private wait(index: number, waiter: ProposalWaiter): void {
    const earlier = this.waiters.get(index);
    if (earlier !== undefined && earlier.term !== waiter.term) earlier.reject(overwritten());
    this.waiters.set(index, waiter);
  }

  /**
   * Forgets the commit notices of earlier terms' batches reaching `first` or beyond: their entries are
   * being overwritten, so none would be told, and one left at the head would hold back the notices of
   * the batches proposed since (noticeCommits goes in order). Each still listens to its signal until
   * it settles: an entry beyond this log's end may never be written again, and only its deadline then
   * ends its wait.
   */
  private dropOverwrittenNotices(first: number, term: number): void {
    if (!this.notices.some((n) => n.term !== term && n.lastIndex >= first)) return;
    this.notices = this.notices.filter((n) => n.term === term || n.lastIndex < first);
  }

  /**
   * Tells the proposers whose batches `committed` completes, in order, whether one of them has more
   * to propose at once, and how far the entries they want applied at once reach. A batch whose last
   * entry committed with another term was overwritten: its proposer hears nothing here.
   */
  noticeCommits(committed: readonly Entry[]): CommitsNoticed {
    const last = committed[committed.length - 1];
    if (last === undefined) return NOTHING_NOTICED;
    const first = committed[0]!.index;
    let more = false;
    let aheadUpTo = 0;
    let taken = 0;
    for (const notice of this.notices) {
      if (notice.lastIndex > last.index) break;
      taken++;
      if (notice.lastIndex < first || committed[notice.lastIndex - first]!.term !== notice.term) continue;
      notice.detach();
      if (notice.notify()) more = true;
      if (notice.aheadUpTo > aheadUpTo) aheadUpTo = notice.aheadUpTo;
    }
    if (taken > 0) this.notices = this.notices.slice(taken);
    return more || aheadUpTo > 0 ? { more, aheadUpTo } : NOTHING_NOTICED;
  }

  /** Settles the proposals of the applied `entries` with `results`, in the same order. */
  settle(entries: readonly Entry[], results: readonly ApplyResult[]): void {
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      const w = this.waiters.get(entry.index);
      if (!w) continue;
      this.waiters.delete(entry.index);
      if (w.term === entry.term) w.resolve(results[i]!);
      else w.reject(overwritten());
    }
  }

  /** Proposals at or below an installed snapshot: whether they made it is known only by their ID. */
  failUpTo(upTo: number): void {
    for (const [index, w] of this.waiters) {
      if (index <= upTo) {
        this.waiters.delete(index);
        w.reject(overwritten());
      }
    }
  }

  /** Rejects every proposal still waiting with `error`. */
  rejectAll(error: Error): void {
    for (const w of this.waiters.values()) w.reject(error);
    this.waiters.clear();
  }

  /** Forgets the commit notices; each one's signal listener goes when its proposal settles. */
  dropNotices(): void {
    this.notices = [];
  }

  /** Forgets the commit notices and stops listening to their signals now. */
  detachNotices(): void {
    for (const notice of this.notices) notice.detach();
    this.notices = [];
  }
}
