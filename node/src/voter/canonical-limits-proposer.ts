import type { Logger } from "pino";
import { canonicalLimitsCommand } from "../state/canonical-limits-command.js";
import { encodeCommand } from "../state/command-envelope.js";
import type { StateMachine } from "../state/state-machine.js";
import { type LeaderClock, SYSTEM_LEADER_CLOCK } from "./leader-clock.js";
import type { RaftDriver } from "./raft-driver.js";

export interface CanonicalLimitsProposerOptions {
  readonly nodeId: string;
  readonly driver: Pick<RaftDriver, "isLeader" | "status" | "propose">;
  readonly stateMachine: Pick<
    StateMachine,
    "applied" | "keptLimitsFingerprint" | "configuredLimits" | "limitsFingerprint"
  >;
  readonly logger: Logger;
  /** How often to look whether a proposal is due: the heartbeat interval suits. */
  readonly checkIntervalMs: number;
  /** How long one proposal may wait for its outcome before the next check may propose again. */
  readonly proposeTimeoutMs: number;
  readonly clock?: LeaderClock;
}

/**
 * Brings the canonical limits the state applies entries under (CanonicalLimitsStore) to this voter's
 * configured ones, through the log: a leader whose configuration differs from what its applied state
 * keeps, or whose state keeps none yet (a new cluster's first leader), proposes `system.canonicalLimits`,
 * and every voter takes the limits at that entry's index. So limits are changed by restarting the
 * voters with new ones: entries committed before apply under the old limits on every voter, whichever
 * restarted when, and a voter that joins later replays the log under the limits of each entry.
 *
 * As the bootstrap admin's proposer, it looks once its term's no-op has applied (the applied state then
 * holds everything committed before the term), proposes at most once per term with a known outcome, and
 * retries after an unknown one.
 */
export class CanonicalLimitsProposer {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private inFlight: Promise<void> | null = null;
  /** The term whose proposal had a definite outcome: not proposed again in that term. */
  private settledTerm = 0;
  private readonly clock: LeaderClock;

  constructor(private readonly options: CanonicalLimitsProposerOptions) {
    this.clock = options.clock ?? SYSTEM_LEADER_CLOCK;
  }

  start(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = setInterval(() => this.check(), this.options.checkIntervalMs);
  }

  /** Stops looking; a proposal under way is left to the driver, which settles it when it stops. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One look: proposes when this voter leads, its term's no-op applied, and the limits differ. */
  check(): void {
    if (this.inFlight !== null || this.stopped) return;
    const { driver, stateMachine } = this.options;
    if (!driver.isLeader()) return;
    const { term } = driver.status();
    if (stateMachine.applied().term !== term || this.settledTerm === term) return;
    if (stateMachine.keptLimitsFingerprint() === stateMachine.limitsFingerprint) return;
    this.inFlight = this.propose(term).finally(() => {
      this.inFlight = null;
    });
  }

  private async propose(term: number): Promise<void> {
    const { driver, logger, nodeId, stateMachine, proposeTimeoutMs } = this.options;
    const data = encodeCommand(
      canonicalLimitsCommand(stateMachine.configuredLimits, term, {
        timestampMs: this.clock.wallMs(),
        monotonicMs: this.clock.monotonicMs(),
      }),
    );
    logger.info(
      { nodeId, term, from: stateMachine.keptLimitsFingerprint(), to: stateMachine.limitsFingerprint },
      "proposing the configured canonical limits",
    );
    try {
      const [result] = await driver.propose([data], AbortSignal.timeout(proposeTimeoutMs));
      this.settledTerm = term;
      if (result?.type === "command" && result.outcome.status === "committed") {
        logger.info({ nodeId, term, index: result.outcome.index }, "canonical limits changed");
      } else {
        logger.error({ nodeId, term, result }, "canonical limits command refused");
      }
    } catch (err) {
      if (this.stopped) return;
      logger.warn({ nodeId, term, err }, "canonical limits proposal has no known outcome; will retry");
    }
  }
}
