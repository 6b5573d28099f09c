import type { Logger } from "pino";
import { Counter } from "prom-client";
import { CommandAdmissionGovernor } from "../../admission/command-admission-governor.js";
import type { CommandAdmissionOptions } from "../../admission/command-admission-options.js";
import { CommandScheduler } from "../../admission/command-scheduler.js";
import type { SchedulerClock } from "../../admission/command-scheduler-options.js";
import {
  type CommandResult,
  CommandRouter,
  FORWARD_CHANNEL,
  type ForwardTransport,
  forwardHandler,
  type VoterCommand,
} from "../../voter/command-router.js";
import type { DriverTimers } from "../../voter/driver-timers.js";
import type { RaftDriver } from "../../voter/raft-driver.js";
import type { SimPeerEndpoint } from "./sim-peer-requests.js";

/**
 * The admission limits of a simulated voter: small, so that a few clients fill a lane, a tenant or a
 * principal and meet refusals, on the leader too for what followers forward.
 */
export const SIM_COMMAND_LIMITS: CommandAdmissionOptions = {
  MaxCommands: 12,
  MaxCommandsPerTenant: 8,
  MaxCommandsPerPrincipal: 5,
  ControlMaxCommands: 6,
  ControlMaxCommandsPerTenant: 4,
  ControlMaxCommandsPerPrincipal: 3,
  MaxConsecutiveControl: 2,
};

/** How a run shapes its voters' command paths. */
export interface CommandPathTuning {
  /** The scheduler's replication deadline, and the forward's timeout, as the voter sets both. */
  readonly deadlineMs: number;
  readonly electionTimeoutMs: number;
  /** Most commands in one unit. */
  readonly unitCommands: number;
  /** Most bytes of data riding in a unit with a control command. */
  readonly dataBytesWithControl: number;
}

/**
 * One process life's command path, wired as voter.ts wires it: the command admission governor, the
 * command scheduler and the command router, which proposes to the driver while leading and forwards to
 * the leader over the peer network otherwise; and the forward channel's handler, which admits and
 * schedules what followers forward. Only the clock, the timers and the peer network are the run's.
 */
export class DriverCommandPath {
  readonly governor: CommandAdmissionGovernor;
  readonly scheduler: CommandScheduler<VoterCommand, CommandResult>;
  /** Refusals of forwarded commands, counted where the governor refused them, as the voter does. */
  readonly rejections = new Counter({
    name: "sim_command_rejections",
    help: "forwarded commands the leader's governor refused",
    labelNames: ["lane", "reason"] as const,
    registers: [],
  });

  constructor(
    driver: RaftDriver,
    endpoint: SimPeerEndpoint,
    /** What the router sees of the endpoint's requests. */
    forwards: (transport: ForwardTransport) => ForwardTransport,
    timers: DriverTimers,
    logger: Logger,
    tuning: CommandPathTuning,
  ) {
    this.governor = new CommandAdmissionGovernor(SIM_COMMAND_LIMITS);
    const router = new CommandRouter({
      driver,
      transport: forwards(endpoint),
      logger,
      forwardTimeoutMs: tuning.deadlineMs,
      leaderWaitMs: Math.min(Math.floor(tuning.deadlineMs / 2), 3 * tuning.electionTimeoutMs),
      clock: { wallMs: () => timers.now(), monotonicMs: () => timers.now() },
      timers,
    });
    const clock: SchedulerClock = {
      now: () => timers.now(),
      schedule: (callback, delayMs) => {
        const handle = timers.setTimeout(callback, delayMs);
        return () => timers.clearTimeout(handle);
      },
    };
    this.scheduler = new CommandScheduler(router, {
      maxConsecutiveControl: this.governor.limits.MaxConsecutiveControl,
      replicationDeadlineMs: tuning.deadlineMs,
      maxBatchCommands: tuning.unitCommands,
      maxDataBytesWithControl: tuning.dataBytesWithControl,
      clock,
    });
    endpoint.handle(FORWARD_CHANNEL, forwardHandler(this.governor, this.scheduler, driver, this.rejections));
  }
}
