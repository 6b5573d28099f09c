import type { Logger } from "pino";
import { bootstrapAdminCommand } from "../state/bootstrap-admin-command.js";
import { encodeCommand } from "../state/command-envelope.js";
import type { StateMachine } from "../state/state-machine.js";
import { type LeaderClock, SYSTEM_LEADER_CLOCK } from "./leader-clock.js";
import type { RaftDriver } from "./raft-driver.js";

export interface BootstrapAdminOptions {
  readonly nodeId: string;
  readonly driver: Pick<RaftDriver, "isLeader" | "status" | "propose">;
  readonly stateMachine: Pick<StateMachine, "applied" | "hasBootstrapAdmin">;
  /** SHA-256 (lowercase hex) of this voter's configured `KeyLoad__Bootstrap__AdminKey`. */
  readonly adminKeyHash: string;
  readonly logger: Logger;
  /** How often to look whether a proposal is due: the heartbeat interval suits. */
  readonly checkIntervalMs: number;
  /** How long one proposal may wait for its outcome before the next check may propose again. */
  readonly proposeTimeoutMs: number;
  readonly clock?: LeaderClock;
}

/**
 * Creates a new cluster's bootstrap admin through the log. The admin is not seeded from each voter's
 * configuration, which may differ between voters and would make their states differ: the leader
 * proposes `system.bootstrapAdmin` with its own configured key's hash, and the first one committed
 * wins on every voter (see Principals.bootstrapAdmin).
 *
 * A leader proposes once its term's no-op has applied: its applied state then holds everything committed
 * before its term, so an admin it does not see there was never committed. It retries after an
 * unknown outcome or a lost leadership, on whichever voter leads next, and every voter stops looking
 * once its applied state holds the admin, which is never removed.
 */
export class BootstrapAdminProposer {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private inFlight: Promise<void> | null = null;
  /** The term whose proposal had a definite outcome: not proposed again in that term. */
  private settledTerm = 0;
  private readonly clock: LeaderClock;

  constructor(private readonly options: BootstrapAdminOptions) {
    this.clock = options.clock ?? SYSTEM_LEADER_CLOCK;
  }

  start(): void {
    if (this.timer !== undefined || this.stopped) return;
    if (this.options.stateMachine.hasBootstrapAdmin()) return;
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
    if (this.inFlight !== null) return;
    const { driver, stateMachine, logger, nodeId } = this.options;
    if (stateMachine.hasBootstrapAdmin()) {
      clearInterval(this.timer);
      this.timer = undefined;
      logger.info({ nodeId, applied: stateMachine.applied().index }, "bootstrap admin present");
      return;
    }
    if (!driver.isLeader()) return;
    const { term } = driver.status();
    // The first entry of a leader's term is its no-op: applied once the last applied entry is of this term.
    if (stateMachine.applied().term !== term || this.settledTerm === term) return;
    this.inFlight = this.propose(term).finally(() => {
      this.inFlight = null;
    });
  }

  private async propose(term: number): Promise<void> {
    const { driver, logger, nodeId, adminKeyHash, proposeTimeoutMs } = this.options;
    const data = encodeCommand(
      bootstrapAdminCommand(adminKeyHash, {
        timestampMs: this.clock.wallMs(),
        monotonicMs: this.clock.monotonicMs(),
      }),
    );
    logger.info({ nodeId, term }, "proposing the bootstrap admin");
    try {
      const [result] = await driver.propose([data], AbortSignal.timeout(proposeTimeoutMs));
      this.settledTerm = term;
      if (result?.type === "command" && result.outcome.status === "committed") {
        // `duplicate` when another leader's proposal of the same command committed first.
        const { index, result: created } = result.outcome;
        logger.info(
          { nodeId, term, index, duplicate: result.duplicate, result: created },
          "bootstrap admin command applied",
        );
      } else {
        // Refused, as it is when another key already holds its hash: not proposed again in this term,
        // and a later leader's applied state decides whether it proposes.
        logger.error({ nodeId, term, result }, "bootstrap admin command refused");
      }
    } catch (err) {
      if (this.stopped) return;
      // Refused before it was appended (no longer leading), overwritten by another leader, or past the
      // timeout: the next check proposes again if this voter leads and the admin is still missing.
      logger.warn({ nodeId, term, err }, "bootstrap admin proposal has no known outcome; will retry");
    }
  }
}
