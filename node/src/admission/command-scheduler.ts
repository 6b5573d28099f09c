import { getEventListeners } from "node:events";
import { KeyLoadError, UnavailableError, UnknownWriteOutcomeError } from "@keyload/contract";
import { ReservationStateError } from "./admission-errors.js";
import type { CommandReservation } from "./command-reservation.js";
import {
  type CommandSchedulerOptions,
  type ResolvedCommandSchedulerOptions,
  resolveCommandSchedulerOptions,
} from "./command-scheduler-options.js";
import type { CommandStage } from "./command-stages.js";
import { FifoQueue } from "./fifo-queue.js";
import type { CommandOutcome, OutcomesAhead, ReplicationTarget } from "./replication-target.js";

interface QueuedCommand<C, R> {
  readonly reservation: CommandReservation;
  readonly command: C;
  readonly answer: (outcome: CommandOutcome<R>) => void;
  /** The scheduler's clock when the command was queued. */
  readonly queuedAt: number;
  /** Answered already: ahead of its unit (OutcomesAhead), so its unit's end skips it. */
  answered: boolean;
}

/**
 * A unit is replicating until its target reports the commit (or its outcomes), then applying until its
 * outcomes are known, then done.
 */
type UnitPhase = "replicating" | "applying" | "done";

interface Unit<C, R> {
  readonly entries: QueuedCommand<C, R>[];
  deadlineAt: number;
  phase: UnitPhase;
  /** The scheduler's clock when the unit was handed to the target, and when it committed. */
  launchedAt: number;
  committedAt: number;
}

type SchedulerState = "running" | "stopping" | "exited";

/**
 * The voter's one command scheduler, on the event loop: it neither applies commands nor runs on a
 * thread of its own. It takes admitted commands from two FIFO lanes, control first but a waiting data
 * command after `maxConsecutiveControl` control commands in a row, and hands them to the replication
 * target (Raft on the leader, the forward to the leader on a follower) one unit at a time. A unit is
 * never preempted; only the replication deadline ends it early. Once the target reports a unit
 * committed, its replication is over and the next unit starts while the committed one is applied: on
 * the leader, the next unit's entries then reach the followers while the last unit's are applied,
 * rather than after. A unit's leading control commands are answered as soon as the target reports
 * their outcomes, ahead of the data behind them (OutcomesAhead); the rest when the unit's outcomes are
 * known. Each command's reservation is released when its outcome is known, just before its caller is
 * answered.
 *
 * Callers cannot cancel: a client that disconnects simply stops waiting for the outcome, while the
 * command keeps its place and its reservation, since it may still commit.
 */
export class CommandScheduler<C, R> {
  private readonly options: ResolvedCommandSchedulerOptions;
  private readonly control = new FifoQueue<QueuedCommand<C, R>>();
  private readonly data = new FifoQueue<QueuedCommand<C, R>>();
  private consecutiveControl = 0;
  private active: Unit<C, R> | undefined;
  /** Units committed but not yet answered; the scheduler exits only once they are. */
  private applying = 0;
  private state: SchedulerState = "running";
  private pumpQueued = false;
  private pumping = false;
  private cancelDeadlineTimer: (() => void) | undefined;
  /**
   * The active unit's signal. Creating an AbortController costs microseconds in Node 20, so units share
   * one until it is aborted or a target leaves a listener on it.
   */
  private controller = new AbortController();
  private readonly exited: Promise<void>;
  private resolveExited!: () => void;
  private readonly pumpCallback = (): void => this.pump();
  private readonly deadlineCallback = (): void => this.checkDeadline();

  constructor(
    private readonly target: ReplicationTarget<C, R>,
    options?: CommandSchedulerOptions,
  ) {
    this.options = resolveCommandSchedulerOptions(options);
    this.exited = new Promise((resolve) => {
      this.resolveExited = resolve;
    });
  }

  /** Commands waiting in each lane, not counting the active unit. */
  get queued(): { readonly data: number; readonly control: number } {
    return { data: this.data.length, control: this.control.length };
  }

  /**
   * Queues an admitted command in its reservation's lane; the scheduler now owns the reservation. The
   * promise never rejects: it resolves with the command's outcome once replication or forwarding
   * completes or fails, the deadline passes, or shutdown drops it from the queue.
   */
  submit(reservation: CommandReservation, command: C): Promise<CommandOutcome<R>> {
    if (reservation.released)
      throw new ReservationStateError(
        "a released command reservation was submitted to the command scheduler",
      );
    if (this.state !== "running") {
      reservation.release();
      return Promise.resolve({
        ok: false,
        error: new UnavailableError("the command scheduler is shutting down; nothing was submitted", {
          reason: "ShuttingDown",
        }),
      });
    }
    return new Promise((answer) => {
      const queuedAt = this.options.clock.now();
      (reservation.lane === "control" ? this.control : this.data).push({
        reservation,
        command,
        answer,
        queuedAt,
        answered: false,
      });
      // A microtask lets the commands of one burst join a single unit.
      if (this.active === undefined && !this.pumpQueued) {
        this.pumpQueued = true;
        queueMicrotask(this.pumpCallback);
      }
    });
  }

  /**
   * Answers every queued command with UnknownWriteOutcome and releases its reservation; the active unit
   * keeps its reservations until it ends. Resolves once the scheduler has exited.
   */
  shutdown(): Promise<void> {
    if (this.state !== "running") return this.exited;
    this.state = "stopping";
    const error = new UnknownWriteOutcomeError(
      "the voter shut down before this command was replicated; retry with the same command ID",
      { reason: "ShuttingDown" },
    );
    for (const queue of [this.control, this.data]) {
      for (let entry = queue.shift(); entry !== undefined; entry = queue.shift()) {
        settle(entry, { ok: false, error });
      }
    }
    if (this.active === undefined && this.applying === 0) this.exit();
    return this.exited;
  }

  private pump(): void {
    this.pumpQueued = false;
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.state === "running" && this.active === undefined) {
        const unit = this.takeUnit();
        if (unit === undefined) break;
        this.launch(unit);
      }
    } finally {
      this.pumping = false;
    }
  }

  /** The lane the next selection takes from, if any command waits. */
  private nextLane(): FifoQueue<QueuedCommand<C, R>> | undefined {
    if (
      this.control.length > 0 &&
      (this.data.length === 0 || this.consecutiveControl < this.options.maxConsecutiveControl)
    )
      return this.control;
    return this.data.length > 0 ? this.data : undefined;
  }

  /**
   * Repeats the selection until the unit reaches its count or byte bound, or, once it holds a control
   * command, its bound on the data riding along.
   */
  private takeUnit(): Unit<C, R> | undefined {
    const { maxBatchCommands, maxBatchBytes, maxDataBytesWithControl, clock, stages } = this.options;
    const entries: QueuedCommand<C, R>[] = [];
    const now = clock.now();
    let bytes = 0;
    let dataBytes = 0;
    let holdsControl = false;
    while (entries.length < maxBatchCommands) {
      const lane = this.nextLane();
      if (lane === undefined) break;
      const entry = lane.peek()!;
      const entryBytes = entry.reservation.retainedBytes;
      const isControl = lane === this.control;
      const nextDataBytes = isControl ? dataBytes : dataBytes + entryBytes;
      if (entries.length > 0) {
        if (bytes + entryBytes > maxBatchBytes) break;
        if ((holdsControl || isControl) && nextDataBytes > maxDataBytesWithControl) break;
      }
      lane.shift();
      // The bound keeps waiting data from starving: a control command that passes over none is not counted.
      this.consecutiveControl = isControl && this.data.length > 0 ? this.consecutiveControl + 1 : 0;
      entry.reservation.markActive();
      stages.observe(entry.reservation.lane, "queue", now - entry.queuedAt);
      entries.push(entry);
      bytes += entryBytes;
      dataBytes = nextDataBytes;
      holdsControl ||= isControl;
    }
    return entries.length === 0
      ? undefined
      : { entries, deadlineAt: 0, phase: "replicating", launchedAt: now, committedAt: 0 };
  }

  private launch(unit: Unit<C, R>): void {
    const { clock, replicationDeadlineMs } = this.options;
    this.active = unit;
    unit.launchedAt = clock.now();
    unit.deadlineAt = unit.launchedAt + replicationDeadlineMs;
    // One timer serves successive units: it is re-armed for the remaining time when it fires early,
    // which keeps setTimeout off the path of every unit.
    this.cancelDeadlineTimer ??= clock.schedule(this.deadlineCallback, replicationDeadlineMs);
    const batch = unit.entries.map((entry) => entry.command);
    let pending: Promise<readonly CommandOutcome<R>[]>;
    try {
      pending = this.target.replicate(
        batch,
        this.controller.signal,
        () => this.committed(unit),
        this.outcomesAhead(unit),
      );
    } catch (error) {
      this.fail(unit, error);
      return;
    }
    pending.then(
      (outcomes) => this.complete(unit, outcomes),
      (error: unknown) => this.fail(unit, error),
    );
  }

  /**
   * The unit's replication is over: the next unit may start. Called from inside the target (the Raft
   * driver's handling of a Ready), so the next unit is launched from a microtask, once that returns.
   * Returns whether one will be.
   */
  private committed(unit: Unit<C, R>): boolean {
    if (unit.phase !== "replicating") return false;
    unit.phase = "applying";
    unit.committedAt = this.options.clock.now();
    this.observeUnit(unit, "replicate", unit.committedAt - unit.launchedAt);
    this.applying++;
    this.active = undefined;
    this.freshSignal();
    if (this.state !== "running" || this.nextLane() === undefined) return false;
    if (!this.pumpQueued) {
      this.pumpQueued = true;
      queueMicrotask(this.pumpCallback);
    }
    return true;
  }

  /**
   * The unit's leading control commands are answered as soon as their outcomes are known, rather than
   * with the data riding behind them in the unit (decision 0026).
   */
  private outcomesAhead(unit: Unit<C, R>): OutcomesAhead<R> | undefined {
    let count = 0;
    while (count < unit.entries.length && unit.entries[count]!.reservation.lane === "control") count++;
    if (count === 0) return undefined;
    return {
      count,
      settle: (index, outcome) => {
        const entry = unit.entries[index];
        if (unit.phase !== "applying" || index >= count || entry === undefined || entry.answered) return;
        this.options.stages.observe("control", "apply", this.options.clock.now() - unit.committedAt);
        settle(entry, outcome);
      },
    };
  }

  private complete(unit: Unit<C, R>, outcomes: readonly CommandOutcome<R>[]): void {
    const phase = unit.phase;
    if (phase === "done") return;
    unit.phase = "done";
    this.observeEnd(unit, phase);
    const entries = unit.entries;
    for (let i = 0; i < entries.length; i++) {
      if (entries[i]!.answered) continue;
      settle(
        entries[i]!,
        outcomes[i] ?? {
          ok: false,
          error: new UnknownWriteOutcomeError("the replication target reported no outcome for this command", {
            reason: "ReplicationFailed",
          }),
        },
      );
    }
    this.unitEnded(phase);
  }

  private fail(unit: Unit<C, R>, cause: unknown): void {
    const phase = unit.phase;
    if (phase === "done") return;
    unit.phase = "done";
    this.observeEnd(unit, phase);
    const error =
      cause instanceof KeyLoadError
        ? cause
        : new UnknownWriteOutcomeError("replication or forwarding failed; the write may have committed", {
            reason: "ReplicationFailed",
            cause,
          });
    for (const entry of unit.entries) if (!entry.answered) settle(entry, { ok: false, error });
    this.unitEnded(phase);
  }

  private checkDeadline(): void {
    this.cancelDeadlineTimer = undefined;
    const unit = this.active;
    if (unit === undefined) return;
    const { clock } = this.options;
    const remaining = unit.deadlineAt - clock.now();
    if (remaining > 0) {
      this.cancelDeadlineTimer = clock.schedule(this.deadlineCallback, remaining);
      return;
    }
    const error = new UnknownWriteOutcomeError(
      `the replication deadline of ${this.options.replicationDeadlineMs} ms passed; the write may have committed`,
      { reason: "ReplicationDeadline" },
    );
    const controller = this.controller;
    // Replaced before the unit ends, since ending it launches the next unit.
    this.controller = new AbortController();
    this.fail(unit, error);
    // Aborted after the unit is answered, so whatever the target does on abort cannot answer it first.
    controller.abort(error);
  }

  /**
   * The stage a unit ends: its apply once committed; else its whole replication, which for a
   * forwarded unit (no commit is reported on a follower) is the round trip to the leader.
   */
  private observeEnd(unit: Unit<C, R>, phase: UnitPhase): void {
    const now = this.options.clock.now();
    if (phase === "applying") this.observeUnit(unit, "apply", now - unit.committedAt);
    else this.observeUnit(unit, "replicate", now - unit.launchedAt);
  }

  private observeUnit(unit: Unit<C, R>, stage: CommandStage, ms: number): void {
    const { stages } = this.options;
    for (const entry of unit.entries) if (!entry.answered) stages.observe(entry.reservation.lane, stage, ms);
  }

  /** `phase`: the phase the unit ended in; an applying unit was no longer the active one. */
  private unitEnded(phase: UnitPhase): void {
    if (phase === "applying") this.applying--;
    else {
      this.active = undefined;
      this.freshSignal();
    }
    if (this.state === "stopping") {
      if (this.active === undefined && this.applying === 0) this.exit();
    } else if (!this.pumping) this.pump();
  }

  /**
   * Listeners left behind would pile up on a shared signal, and a committed unit still listening must
   * not hear the next unit's deadline: the next unit gets a clean signal instead.
   */
  private freshSignal(): void {
    if (getEventListeners(this.controller.signal, "abort").length > 0)
      this.controller = new AbortController();
  }

  private exit(): void {
    this.state = "exited";
    this.cancelDeadlineTimer?.();
    this.cancelDeadlineTimer = undefined;
    this.resolveExited();
  }
}

/** Releases the reservation before answering, so a caller that retries at once finds the capacity. */
function settle<C, R>(entry: QueuedCommand<C, R>, outcome: CommandOutcome<R>): void {
  entry.answered = true;
  entry.reservation.release();
  entry.answer(outcome);
}
