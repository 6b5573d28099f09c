import type { Logger } from "pino";
import type { ApplyResult } from "../state/apply-result.js";
import type { LeaderStamps } from "../state/bootstrap-admin-command.js";
import type { CommandEnvelope } from "../state/command-envelope.js";
import { encodeCommand } from "../state/command-envelope.js";
import type { StateMachine } from "../state/state-machine.js";
import type { LeaderStamper } from "./leader-stamper.js";
import type { RaftDriver } from "./raft-driver.js";

/** What a leader proposes through a TermProposer, and when. */
export interface TermProposal {
  /** For the logs: what is proposed. */
  readonly what: string;
  /** Whether the proposal is wanted now, by what this voter's applied state holds. */
  wanted(): boolean;
  /** Whether it never will be again: the proposer stops looking. */
  finished?(): boolean;
  /** The command, stamped by the leader of `term`. */
  command(term: number, stamps: LeaderStamps): CommandEnvelope;
  /** What the logs say of a committed proposal besides its index. */
  committed?(result: Extract<ApplyResult, { type: "command" }>): Readonly<Record<string, unknown>>;
}

export interface TermProposerOptions {
  readonly driver: Pick<RaftDriver, "isLeader" | "status" | "propose">;
  readonly stateMachine: Pick<StateMachine, "applied">;
  readonly logger: Logger;
  /** How often to look whether a proposal is due: the heartbeat interval suits. */
  readonly checkIntervalMs: number;
  /** How long one proposal may wait for its outcome before the next check may propose again. */
  readonly proposeTimeoutMs: number;
  /** What the leader stamps its commands with, as it stamps its clients'. */
  readonly stamper: Pick<LeaderStamper, "stamps">;
}

/**
 * Proposes a voter's own command when its applied state wants it, as a leader: once its term's no-op
 * has applied (its applied state then holds everything committed before the term, so what it does not
 * see there was never committed), at most once per term with a known outcome, and again after an
 * unknown outcome or a lost leadership, on whichever voter leads next.
 */
export class TermProposer {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private inFlight: Promise<void> | null = null;
  /** The term whose proposal had a definite outcome: not proposed again in that term. */
  private settledTerm = 0;

  constructor(
    private readonly options: TermProposerOptions,
    private readonly proposal: TermProposal,
  ) {}

  start(): void {
    if (this.timer !== undefined || this.stopped || this.proposal.finished?.()) return;
    this.timer = setInterval(() => this.check(), this.options.checkIntervalMs);
  }

  /**
   * Stops looking. A proposal under way is left to the driver, which settles it when it stops: waiting
   * for it here could hold a shutdown for the whole timeout.
   */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private check(): void {
    if (this.inFlight !== null || this.stopped) return;
    const { driver, stateMachine, logger } = this.options;
    if (this.proposal.finished?.()) {
      clearInterval(this.timer);
      this.timer = undefined;
      logger.info({ applied: stateMachine.applied().index }, `${this.proposal.what} present`);
      return;
    }
    if (!driver.isLeader()) return;
    const { term } = driver.status();
    // The first entry of a leader's term is its no-op: applied once the last applied entry is of this term.
    if (stateMachine.applied().term !== term || this.settledTerm === term) return;
    if (!this.proposal.wanted()) return;
    this.inFlight = this.propose(term).finally(() => {
      this.inFlight = null;
    });
  }

  private async propose(term: number): Promise<void> {
    const { driver, proposeTimeoutMs } = this.options;
    const { what } = this.proposal;
    const command = this.proposal.command(term, this.options.stamper.stamps());
    const data = encodeCommand(command);
    // The voter's logger names the node already.
    const logger = this.options.logger.child({ term, commandId: command.commandId });
    logger.info(`proposing the ${what}`);
    try {
      const [result] = await driver.propose([data], AbortSignal.timeout(proposeTimeoutMs));
      this.settledTerm = term;
      if (result?.type === "command" && result.outcome.status === "committed") {
        const more = this.proposal.committed?.(result) ?? {};
        logger.info({ index: result.outcome.index, ...more }, `${what} command applied`);
      } else {
        // Refused: not proposed again in this term; a later leader's applied state decides.
        logger.error({ result }, `${what} command refused`);
      }
    } catch (err) {
      if (this.stopped) return;
      // Refused before it was appended (no longer leading), overwritten by another leader, or past the
      // timeout: the next check proposes again if this voter leads and it is still wanted.
      logger.warn({ err }, `${what} proposal has no known outcome; will retry`);
    }
  }
}
