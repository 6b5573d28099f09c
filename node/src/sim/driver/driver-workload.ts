import { UnavailableError, UnknownWriteOutcomeError } from "@keyload/contract";
import type { SeededRandom } from "../../raft/seeded-random.js";
import type { ApplyResult } from "../../state/apply-result.js";
import { commandDigest } from "../digest.js";
import type { SafetyChecker } from "../invariants.js";
import { pick, weighted } from "../random-choices.js";
import { fail } from "../sim-failure.js";
import { encodeCommand } from "../sim-state-machine.js";
import type { DriverNode } from "./driver-node.js";
import type { SimCommandResult } from "./sim-driver-state.js";

/**
 * How long a proposal may take before its caller gives up on it, as the command scheduler's
 * replication deadline does (`ReplicationDeadlineMs`), in the run's compressed time.
 */
export const PROPOSAL_DEADLINE_MS = 1000;

/** What clients did in a run, for its statistics. */
export interface WorkloadCounts {
  proposals: number;
  proposalsRefused: number;
  acked: number;
  proposalsUnknown: number;
  reads: number;
  readsRefused: number;
  readsServed: number;
  readsFailed: number;
  transfers: number;
}

export function emptyWorkloadCounts(): WorkloadCounts {
  return {
    proposals: 0,
    proposalsRefused: 0,
    acked: 0,
    proposalsUnknown: 0,
    reads: 0,
    readsRefused: 0,
    readsServed: 0,
    readsFailed: 0,
    transfers: 0,
  };
}

/** What the clients see of the run. */
export interface DriverWorkloadHost {
  readonly random: SeededRandom;
  readonly checker: SafetyChecker;
  /** Nodes whose driver runs and takes requests (not paused). */
  serving(): DriverNode[];
  note(node: string, text: string): void;
  /** Runs `work` after `delay` of simulated time. */
  after(delay: number, work: () => void): void;
  /** A check failed inside a promise's continuation: the run ends with it. */
  violation(error: unknown): void;
}

/**
 * The clients of a driver run, going through the driver's own API as the voter's request handling
 * does: proposals (`propose`, answered with each entry's apply result), linearizable reads
 * (`readBarrier`, then the local state) and leadership transfers. Every acknowledged write must be
 * the committed entry at its index, and every read must see everything applied anywhere before it
 * was issued.
 */
export class DriverWorkload {
  readonly counts = emptyWorkloadCounts();
  private nextCommandId = 1;
  /** Per process life (`id#life`), the calls it took and has not answered, each as traced. */
  private readonly waiting = new Map<string, Set<string>>();
  private calls = 0;

  constructor(private readonly host: DriverWorkloadHost) {}

  operate(): void {
    const choice = weighted(this.host.random, [6, 1, 3, 0.3]);
    if (choice === 0) this.propose(1);
    else if (choice === 1) this.propose(2 + this.host.random.nextInt(3));
    else if (choice === 2) this.read();
    else this.transfer();
  }

  /** The calls (proposals, reads, membership changes) `node`'s current life took and has not answered. */
  unanswered(node: DriverNode): string[] {
    return [...(this.waiting.get(lifeOf(node)) ?? [])];
  }

  /** Counts `answer`, a call `node`'s driver took, as waiting on its life until it settles. */
  track(node: DriverNode, what: string, answer: Promise<unknown>): void {
    const key = lifeOf(node);
    const call = `${what} (call ${++this.calls})`;
    const waiting = this.waiting.get(key) ?? new Set<string>();
    this.waiting.set(key, waiting.add(call));
    const settled = (): void => {
      waiting.delete(call);
      if (waiting.size === 0) this.waiting.delete(key);
    };
    answer.then(settled, settled);
  }

  private leaderOrAny(): DriverNode | null {
    const serving = this.host.serving();
    if (serving.length === 0) return null;
    const leaders = serving.filter((n) => n.driver!.isLeader());
    return leaders.length > 0 && this.host.random.chance(0.85)
      ? pick(this.host.random, leaders)
      : pick(this.host.random, serving);
  }

  /**
   * Proposes `count` commands as the voter's command scheduler does: now and then with more to propose
   * at once when they commit (the leader then applies them after the next batch's appends), with the
   * first few answered ahead of the rest, and cut short by the caller.
   */
  private propose(count: number): void {
    const node = this.leaderOrAny();
    if (node === null) return;
    const { random } = this.host;
    const data: Uint8Array[] = [];
    for (let k = 0; k < count; k++) {
      data.push(
        encodeCommand(this.nextCommandId++, random.nextInt(256), random.nextUint32(), random.nextInt(41)),
      );
    }
    const digests = data.map(commandDigest);
    const more = random.chance(0.5);
    const aheadCount = random.chance(0.3) ? 1 + random.nextInt(count) : 0;
    const cutShort = random.chance(0.1);
    const abort = new AbortController();
    this.counts.proposals++;
    const life = node.life;
    let answered: Promise<ApplyResult[]>;
    try {
      answered = node.driver!.propose(
        data,
        abort.signal,
        () => more,
        aheadCount === 0
          ? undefined
          : {
              count: aheadCount,
              // A result heard ahead is as binding as the batch's.
              settle: (k, result) => this.guard(() => this.checkResult(node, result, digests[k]!)),
            },
      );
    } catch (error) {
      this.expectRefusal(node, "propose", error);
      this.counts.proposalsRefused++;
      return;
    }
    this.host.after(cutShort ? 1 + random.nextInt(20) : PROPOSAL_DEADLINE_MS, () => abort.abort());
    const what = `propose x${count}${more ? " (more)" : ""}${aheadCount > 0 ? ` ahead ${aheadCount}` : ""}`;
    this.track(node, what, answered);
    this.host.note(node.id, what);
    answered.then(
      (results) =>
        this.guard(() => {
          if (results.length !== digests.length)
            fail(
              "core-contract",
              `${node.id} answered ${results.length} results for ${digests.length} proposals`,
            );
          for (const [k, result] of results.entries()) this.checkResult(node, result, digests[k]!);
          this.counts.acked += results.length;
        }),
      (error: unknown) =>
        this.guard(() => {
          if (!(error instanceof UnknownWriteOutcomeError || error instanceof UnavailableError))
            fail("core-contract", `${node.id}#${life} propose rejected with ${String(error)}`);
          this.counts.proposalsUnknown++;
        }),
    );
  }

  /** An acknowledged proposal is the committed entry at the index its result names. */
  private checkResult(node: DriverNode, r: ApplyResult, digest: number): void {
    if (r.type !== "command" || r.outcome.status !== "committed")
      fail("acknowledged-write", `${node.id} answered a proposal with a ${r.type} result at ${r.entryIndex}`);
    const result = r.outcome.result as SimCommandResult;
    this.host.checker.observeAck(node.id, r.entryIndex, result.term, digest);
    this.host.note(node.id, `ack ${r.entryIndex}/t${result.term}`);
  }

  private read(): void {
    const serving = this.host.serving();
    if (serving.length === 0) return;
    const node = pick(this.host.random, serving);
    // Everything applied anywhere had committed before this read began: the read must see it.
    const minIndex = this.host.checker.committedIndex;
    const life = node.life;
    this.counts.reads++;
    let confirmed: Promise<void>;
    try {
      confirmed = node.driver!.readBarrier();
    } catch (error) {
      this.expectRefusal(node, "readBarrier", error);
      this.counts.readsRefused++;
      return;
    }
    const what = `read (must see ${minIndex})`;
    this.track(node, what, confirmed);
    this.host.note(node.id, what);
    confirmed.then(
      () =>
        this.guard(() => {
          if (node.life !== life || node.state === null) return;
          const applied = node.state.live.applied;
          if (applied < minIndex)
            fail(
              "linearizable-read",
              `${node.id} served a read at ${applied}, but ${minIndex} had applied before it was issued`,
            );
          this.counts.readsServed++;
        }),
      (error: unknown) =>
        this.guard(() => {
          if (!(error instanceof UnavailableError))
            fail("core-contract", `${node.id} readBarrier rejected with ${String(error)}`);
          this.counts.readsFailed++;
        }),
    );
  }

  private transfer(): void {
    const leaders = this.host.serving().filter((n) => n.driver!.isLeader());
    if (leaders.length === 0) return;
    const leader = pick(this.host.random, leaders);
    const others = leader.driver!.raft.status().conf.voters.filter((id) => id !== leader.id);
    if (others.length === 0) return;
    const to = pick(this.host.random, others);
    this.counts.transfers++;
    this.host.note(leader.id, `transfer leadership to ${to}`);
    leader.driver!.transferLeadershipTo(to, 200).catch(() => undefined);
  }

  private expectRefusal(node: DriverNode, call: string, error: unknown): void {
    if (!(error instanceof UnavailableError))
      fail("core-contract", `${node.id}.${call} threw ${String(error)}`);
  }

  private guard(check: () => void): void {
    try {
      check();
    } catch (error) {
      this.host.violation(error);
    }
  }
}

function lifeOf(node: DriverNode): string {
  return `${node.id}#${node.life}`;
}
