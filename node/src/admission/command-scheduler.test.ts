import { UnavailableError, UnknownWriteOutcomeError } from "@keyload/contract";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AdmissionOptionError, ReservationStateError } from "./admission-errors.js";
import { AdmissionRefusal } from "./admission-refusal.js";
import { CommandAdmissionGovernor } from "./command-admission-governor.js";
import type { CommandReservation } from "./command-reservation.js";
import { CommandScheduler } from "./command-scheduler.js";
import type { CommandSchedulerOptions } from "./command-scheduler-options.js";
import { payloadSize } from "./payload-accounting.js";
import type { CommandOutcome, OutcomesAhead, ReplicationTarget } from "./replication-target.js";
import { flush } from "./test-fixtures/flush.js";
import { ManualClock } from "./test-fixtures/manual-clock.js";

type Lane = "data" | "control";

interface Command {
  readonly id: string;
  readonly lane: Lane;
}

interface HeldUnit {
  readonly batch: readonly Command[];
  readonly signal: AbortSignal;
  /** Reports the unit committed, as a leader does before it applies the unit. */
  readonly committed: () => boolean;
  /** Where the target may report the unit's leading control commands' outcomes early. */
  readonly ahead: OutcomesAhead<string> | undefined;
  resolve(outcomes: readonly CommandOutcome<string>[]): void;
  reject(error: unknown): void;
}

/** A target that holds each unit until the test completes it. */
class HeldTarget implements ReplicationTarget<Command, string> {
  readonly units: HeldUnit[] = [];
  private next = 0;

  replicate(
    batch: readonly Command[],
    signal: AbortSignal,
    committed: () => boolean,
    ahead?: OutcomesAhead<string>,
  ): Promise<readonly CommandOutcome<string>[]> {
    return new Promise((resolve, reject) =>
      this.units.push({ batch: [...batch], signal, committed, ahead, resolve, reject }),
    );
  }

  get pending(): number {
    return this.units.length - this.next;
  }

  /** Completes the oldest unit not yet completed, every command successfully. */
  completeNext(): HeldUnit {
    const unit = this.units[this.next++];
    if (unit === undefined) throw new Error("no unit is pending");
    unit.resolve(unit.batch.map((c) => ({ ok: true, value: `applied ${c.id}` })));
    return unit;
  }

  dispatched(): Command[] {
    return this.units.flatMap((u) => u.batch);
  }
}

class Harness {
  readonly governor = new CommandAdmissionGovernor({
    MaxCommands: 10_000,
    MaxCommandsPerTenant: 10_000,
    MaxCommandsPerPrincipal: 10_000,
    ControlMaxCommands: 10_000,
    ControlMaxRetainedBytes: 1024 * 1024 * 1024,
    ControlMaxCommandsPerTenant: 10_000,
    ControlMaxCommandsPerPrincipal: 10_000,
  });
  readonly target = new HeldTarget();
  readonly clock = new ManualClock();
  readonly scheduler: CommandScheduler<Command, string>;
  readonly outcomes = new Map<string, CommandOutcome<string>>();
  private seq = 0;

  constructor(options: Omit<CommandSchedulerOptions, "clock"> = {}) {
    this.scheduler = new CommandScheduler(this.target, { ...options, clock: this.clock });
  }

  reserve(lane: Lane, payload = "{}"): CommandReservation {
    const result = this.governor.tryAdmit({
      lane,
      tenantId: "t",
      principalId: "p",
      payload: payloadSize(payload),
    });
    if (result instanceof AdmissionRefusal) throw new Error(result.message);
    return result;
  }

  submit(lane: Lane, payload = "{}"): Command {
    const command = { id: `${lane[0]}${this.seq++}`, lane };
    void this.scheduler
      .submit(this.reserve(lane, payload), command)
      .then((o) => this.outcomes.set(command.id, o));
    return command;
  }

  /** Starts a shutdown; the function returned tells whether the scheduler has exited since. */
  shutdown(): () => boolean {
    let exited = false;
    void this.scheduler.shutdown().then(() => {
      exited = true;
    });
    return () => exited;
  }

  inUse(): number {
    return this.governor.usage("data").commands + this.governor.usage("control").commands;
  }
}

describe("CommandScheduler", () => {
  it("hands a burst on as one unit and releases each reservation when its outcome is known", async () => {
    const h = new Harness();
    const a = h.submit("data");
    const b = h.submit("control");
    await flush();
    expect(h.target.units).toHaveLength(1);
    expect(h.target.units[0]!.batch).toEqual([b, a]);
    expect(h.governor.usage("data")).toMatchObject({ commands: 1, queued: 0, active: 1 });
    expect(h.governor.usage("control")).toMatchObject({ commands: 1, queued: 0, active: 1 });
    h.target.completeNext();
    await flush();
    expect(h.outcomes.get(a.id)).toEqual({ ok: true, value: `applied ${a.id}` });
    expect(h.outcomes.get(b.id)).toEqual({ ok: true, value: `applied ${b.id}` });
    expect(h.inUse()).toBe(0);
    expect(h.governor.status().verifiedScopes).toEqual([]);
  });

  it("keeps one unit active at a time and never preempts it, even for control work", async () => {
    const h = new Harness();
    h.submit("data");
    await flush();
    const urgent = h.submit("control");
    await flush();
    expect(h.target.units).toHaveLength(1);
    expect(h.governor.usage("control")).toMatchObject({ queued: 1, active: 0 });
    h.target.completeNext();
    await flush();
    expect(h.target.units).toHaveLength(2);
    expect(h.target.units[1]!.batch).toEqual([urgent]);
  });

  it("starts the next unit once the active one is committed, answering the committed one from its outcomes", async () => {
    const h = new Harness({ replicationDeadlineMs: 500 });
    const a = h.submit("data");
    await flush();
    const first = h.target.units[0]!;
    // The target still waits on the first unit's signal, as the Raft driver may.
    first.signal.addEventListener("abort", () => undefined);
    expect(first.committed()).toBe(false); // nothing waits to go next
    expect(first.committed()).toBe(false);
    const b = h.submit("data");
    await flush();
    expect(h.target.units).toHaveLength(2);
    const second = h.target.units[1]!;
    expect(second.batch).toEqual([b]);
    expect(second.signal).not.toBe(first.signal);
    expect(h.outcomes.has(a.id)).toBe(false);
    expect(h.governor.usage("data")).toMatchObject({ commands: 2, active: 2 });

    // The second unit's deadline is its own: the committed first unit still gets its outcome.
    const c = h.submit("data");
    h.clock.advance(500);
    await flush();
    expect(h.outcomes.get(b.id)).toMatchObject({ ok: false, error: { reason: "ReplicationDeadline" } });
    expect(first.signal.aborted).toBe(false);
    expect(h.target.units).toHaveLength(3);
    expect(h.target.units[2]!.batch).toEqual([c]);
    first.resolve([{ ok: true, value: "applied first" }]);
    await flush();
    expect(h.outcomes.get(a.id)).toEqual({ ok: true, value: "applied first" });

    // Told while commands wait, the scheduler says a unit follows.
    h.submit("control");
    expect(h.target.units[2]!.committed()).toBe(true);
    await flush();
    expect(h.target.units).toHaveLength(4);
  });

  it("reports each command's queue, replicate and apply times, and a forward's as replication", async () => {
    const seen: string[] = [];
    const h = new Harness({ stages: { observe: (lane, stage, ms) => seen.push(`${lane} ${stage} ${ms}`) } });
    const a = h.submit("data");
    await flush();
    h.clock.advance(3);
    const b = h.submit("control");
    h.clock.advance(4);
    h.target.units[0]!.committed();
    await flush(); // b's unit starts once a's has committed
    h.clock.advance(5);
    h.target.units[0]!.resolve([{ ok: true, value: a.id }]);
    await flush();
    h.clock.advance(6);
    h.target.units[1]!.resolve([{ ok: true, value: b.id }]); // never reported committed, as a forward
    await flush();
    expect(seen).toEqual([
      "data queue 0",
      "data replicate 7",
      "control queue 4",
      "data apply 5",
      "control replicate 11",
    ]);
  });

  it("answers a unit's leading control commands as soon as the target reports them, ahead of its data", async () => {
    const seen: string[] = [];
    const h = new Harness({ stages: { observe: (lane, stage, ms) => seen.push(`${lane} ${stage} ${ms}`) } });
    const d = h.submit("data");
    const c1 = h.submit("control");
    const c2 = h.submit("control");
    await flush();
    const unit = h.target.units[0]!;
    expect(unit.batch).toEqual([c1, c2, d]);
    expect(unit.ahead?.count).toBe(2);
    // Not before the commit: the outcome of a unit still replicating is not known.
    unit.ahead!.settle(0, { ok: true, value: "too soon" });
    await flush();
    expect(h.outcomes.has(c1.id)).toBe(false);
    h.clock.advance(2);
    unit.committed();
    h.clock.advance(3);
    unit.ahead!.settle(0, { ok: true, value: "c1 ahead" });
    await flush();
    expect(h.outcomes.get(c1.id)).toEqual({ ok: true, value: "c1 ahead" });
    expect(h.outcomes.has(c2.id)).toBe(false);
    expect(h.outcomes.has(d.id)).toBe(false);
    expect(h.governor.usage("control").commands).toBe(1);
    // Reported again, or for the data behind the control commands: ignored.
    unit.ahead!.settle(0, { ok: true, value: "again" });
    unit.ahead!.settle(2, { ok: true, value: "data ahead" });
    await flush();
    expect(h.outcomes.get(c1.id)).toEqual({ ok: true, value: "c1 ahead" });
    expect(h.outcomes.has(d.id)).toBe(false);
    h.clock.advance(4);
    unit.resolve([
      { ok: true, value: "c1" },
      { ok: true, value: "c2" },
      { ok: true, value: "d" },
    ]);
    await flush();
    expect(h.outcomes.get(c1.id)).toEqual({ ok: true, value: "c1 ahead" });
    expect(h.outcomes.get(c2.id)).toEqual({ ok: true, value: "c2" });
    expect(h.outcomes.get(d.id)).toEqual({ ok: true, value: "d" });
    expect(h.inUse()).toBe(0);
    // c1's apply ended when it was answered; the others' with the unit.
    expect(seen.filter((line) => line.includes(" apply "))).toEqual([
      "control apply 3",
      "control apply 7",
      "data apply 7",
    ]);
  });

  it("names no commands ahead of a unit without leading control commands, and fails only those not yet answered", async () => {
    const h = new Harness();
    h.submit("data");
    await flush();
    expect(h.target.units[0]!.ahead).toBeUndefined();
    h.target.units[0]!.committed();
    const c = h.submit("control");
    const d = h.submit("data");
    await flush();
    const unit = h.target.units[1]!;
    expect(unit.batch).toEqual([c, d]);
    unit.committed();
    unit.ahead!.settle(0, { ok: true, value: "c ahead" });
    unit.reject(new Error("the apply failed"));
    await flush();
    expect(h.outcomes.get(c.id)).toEqual({ ok: true, value: "c ahead" });
    expect(h.outcomes.get(d.id)).toMatchObject({ ok: false, error: { reason: "ReplicationFailed" } });
    h.target.completeNext();
    await flush();
    expect(h.inUse()).toBe(0);
  });

  it("exits on shutdown only once a committed unit has its outcomes", async () => {
    const h = new Harness();
    const a = h.submit("data");
    await flush();
    h.target.units[0]!.committed();
    const exited = h.shutdown();
    await flush();
    expect(exited()).toBe(false);
    expect(h.inUse()).toBe(1);
    h.target.completeNext();
    await flush();
    expect(exited()).toBe(true);
    expect(h.outcomes.get(a.id)).toEqual({ ok: true, value: `applied ${a.id}` });
    expect(h.inUse()).toBe(0);
  });

  it("takes a waiting data command after MaxConsecutiveControl control commands", async () => {
    const h = new Harness({ maxBatchCommands: 1000 });
    for (let i = 0; i < 5; i++) h.submit("data");
    for (let i = 0; i < 30; i++) h.submit("control");
    await flush();
    const lanes = h.target.units[0]!.batch.map((c) => (c.lane === "control" ? "C" : "D")).join("");
    expect(lanes).toBe(`${"C".repeat(8)}D${"C".repeat(8)}D${"C".repeat(8)}D${"C".repeat(6)}DD`);
  });

  it("counts control commands toward MaxConsecutiveControl only while data waits", async () => {
    const h = new Harness({ maxBatchCommands: 1000 });
    // Eight control commands with no data waiting pass over no one.
    for (let i = 0; i < 8; i++) h.submit("control");
    await flush();
    h.target.completeNext();
    await flush();
    // So the next unit still takes control first.
    h.submit("data");
    h.submit("control");
    h.submit("control");
    h.submit("control");
    await flush();
    h.target.completeNext();
    await flush();
    const lanes = h.target.units[1]!.batch.map((c) => (c.lane === "control" ? "C" : "D")).join("");
    expect(lanes).toBe("CCCD");
  });

  it("bounds a unit by count and by retained bytes, letting a single large command go alone", async () => {
    // 4496 retained bytes each, and 4104 for "{}": two small ones fit in 13000, three "{}" do too.
    const small = "x".repeat(100);
    const h = new Harness({ maxBatchCommands: 3, maxBatchBytes: 13_000 });
    const commands = [h.submit("data", small), h.submit("data", small), h.submit("data", small)];
    const large = h.submit("data", "y".repeat(5000));
    const rest = [h.submit("data"), h.submit("data"), h.submit("data"), h.submit("data")];
    await flush();
    const sizes: number[] = [];
    while (h.target.pending > 0) {
      sizes.push(h.target.units[h.target.units.length - 1]!.batch.length);
      h.target.completeNext();
      await flush();
    }
    expect(sizes).toEqual([2, 1, 1, 3, 1]);
    expect(h.target.dispatched()).toEqual([...commands, large, ...rest]);
    expect(h.inUse()).toBe(0);
  });

  it("keeps the data riding with a control command within maxDataBytesWithControl", async () => {
    // 4496 retained bytes per command: two data fit beside control in 10,000, a third does not.
    const small = "x".repeat(100);
    const h = new Harness({ maxBatchBytes: 100_000, maxDataBytesWithControl: 10_000 });
    const data = Array.from({ length: 6 }, () => h.submit("data", small));
    const control = h.submit("control", small);
    await flush();
    h.target.completeNext();
    await flush();
    // Data alone fills a unit to maxBatchBytes; a control command behind it waits for the next one.
    const late = h.submit("control", small);
    const more = Array.from({ length: 4 }, () => h.submit("data", small));
    h.target.completeNext();
    await flush();
    expect(h.target.units.map((u) => u.batch)).toEqual([
      [control, data[0], data[1]],
      [data[2], data[3], data[4], data[5]],
      [late, more[0], more[1]],
    ]);
    h.target.completeNext();
    await flush();
    expect(h.target.units[3]!.batch).toEqual([more[2], more[3]]);
    h.target.completeNext();
    await flush();
    expect(h.inUse()).toBe(0);
  });

  it("never adds a control command to a unit whose data already exceeds that bound", async () => {
    const h = new Harness({ maxConsecutiveControl: 1, maxDataBytesWithControl: 5_000 });
    const first = h.submit("control");
    const big = h.submit("data", "y".repeat(2000));
    const controls = [h.submit("control"), h.submit("control")];
    await flush();
    // The data command (about 8,000 retained bytes) cannot ride with the first control command...
    expect(h.target.units[0]!.batch).toEqual([first]);
    h.target.completeNext();
    await flush();
    // ...and goes first after it (one control command in a row at most), alone: the control commands
    // behind it wait for a unit of their own rather than for its bytes.
    expect(h.target.units[1]!.batch).toEqual([big]);
    h.target.completeNext();
    await flush();
    expect(h.target.units[2]!.batch).toEqual(controls);
  });

  it("schedules within bounds: at most MaxConsecutiveControl control in a row while data waits, FIFO per lane", async () => {
    type Op = "control" | "data" | "complete";
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.constantFrom<Op>("control", "control", "data", "complete"), { maxLength: 80 }),
        async (maxConsecutiveControl, maxBatchCommands, ops) => {
          const h = new Harness({ maxConsecutiveControl, maxBatchCommands });
          const submitted: Command[] = [];
          /** How many commands had been submitted when each unit was launched. */
          const launchedAfter: number[] = [];
          const replicate = h.target.replicate.bind(h.target);
          h.target.replicate = (batch, signal, committed) => {
            launchedAfter.push(submitted.length);
            return replicate(batch, signal, committed);
          };
          for (const op of ops) {
            if (op === "complete") {
              if (h.target.pending > 0) h.target.completeNext();
            } else {
              submitted.push(h.submit(op));
            }
            await flush();
          }
          while (h.target.pending > 0) {
            h.target.completeNext();
            await flush();
          }

          const dispatched = h.target.dispatched();
          expect(dispatched).toHaveLength(submitted.length);
          for (const lane of ["control", "data"] as const) {
            expect(dispatched.filter((c) => c.lane === lane)).toEqual(
              submitted.filter((c) => c.lane === lane),
            );
          }

          // Replays every selection against the rule, knowing what waited when each unit was launched.
          const taken = new Set<string>();
          let consecutive = 0;
          h.target.units.forEach((unit, u) => {
            const waiting = submitted.slice(0, launchedAfter[u]).filter((c) => !taken.has(c.id));
            expect(unit.batch.length).toBe(Math.min(maxBatchCommands, waiting.length));
            for (const command of unit.batch) {
              const controlWaits = waiting.some((c) => c.lane === "control" && !taken.has(c.id));
              const dataWaits = waiting.some((c) => c.lane === "data" && !taken.has(c.id));
              const expected =
                controlWaits && (!dataWaits || consecutive < maxConsecutiveControl) ? "control" : "data";
              expect(command.lane).toBe(expected);
              // Only a control command that passes over waiting data counts toward the bound.
              consecutive = command.lane === "control" && dataWaits ? consecutive + 1 : 0;
              if (command.lane === "control" && dataWaits)
                expect(consecutive).toBeLessThanOrEqual(maxConsecutiveControl);
              taken.add(command.id);
            }
          });
          expect(h.inUse()).toBe(0);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("fails the active unit with UnknownWriteOutcome at the replication deadline and releases it", async () => {
    const h = new Harness({ replicationDeadlineMs: 10_000 });
    const a = h.submit("data");
    const b = h.submit("control");
    await flush();
    const unit = h.target.units[0]!;
    h.clock.advance(9_999);
    await flush();
    expect(h.outcomes.size).toBe(0);
    expect(h.inUse()).toBe(2);
    const queuedMeanwhile = h.submit("data");
    h.clock.advance(1);
    await flush();
    for (const command of [a, b]) {
      const outcome = h.outcomes.get(command.id);
      expect(outcome?.ok).toBe(false);
      if (outcome?.ok === false) {
        expect(outcome.error).toBeInstanceOf(UnknownWriteOutcomeError);
        expect(outcome.error).toMatchObject({ code: "UnknownWriteOutcome", reason: "ReplicationDeadline" });
      }
    }
    expect(unit.signal.aborted).toBe(true);
    expect(unit.signal.reason).toBeInstanceOf(UnknownWriteOutcomeError);
    // The next unit starts with a live signal; the late answer of the expired unit changes nothing.
    expect(h.target.units[1]!.batch).toEqual([queuedMeanwhile]);
    expect(h.target.units[1]!.signal.aborted).toBe(false);
    unit.resolve([{ ok: true, value: "late" }]);
    await flush();
    expect(h.outcomes.get(a.id)?.ok).toBe(false);
    expect(h.inUse()).toBe(1);
  });

  it("measures the deadline from each unit's own start, with one timer for successive units", async () => {
    const h = new Harness({ replicationDeadlineMs: 10_000 });
    h.submit("data");
    await flush();
    h.clock.advance(6_000);
    h.target.completeNext();
    const second = h.submit("data");
    await flush();
    expect(h.clock.pendingTimers).toBe(1);
    h.clock.advance(4_000);
    await flush();
    expect(h.outcomes.has(second.id)).toBe(false);
    h.clock.advance(5_999);
    await flush();
    expect(h.outcomes.has(second.id)).toBe(false);
    h.clock.advance(1);
    await flush();
    expect(h.outcomes.get(second.id)).toMatchObject({ ok: false, error: { reason: "ReplicationDeadline" } });
  });

  it("gives the next unit a fresh signal when a target leaves an abort listener behind", async () => {
    const h = new Harness();
    h.submit("data");
    await flush();
    const first = h.target.units[0]!;
    h.target.completeNext();
    h.submit("data");
    await flush();
    // A tidy target: the signal is reused.
    expect(h.target.units[1]!.signal).toBe(first.signal);
    h.target.units[1]!.signal.addEventListener("abort", () => {});
    h.target.completeNext();
    h.submit("data");
    await flush();
    expect(h.target.units[2]!.signal).not.toBe(first.signal);
    expect(h.target.units[2]!.signal.aborted).toBe(false);
  });

  it("passes a typed rejection of the target to every command of the unit", async () => {
    const h = new Harness();
    const a = h.submit("data");
    const b = h.submit("data");
    await flush();
    const leaderRefusal = new AdmissionRefusal(
      "CommandBytes",
      "command",
      "data",
      "MaxRetainedBytes",
      1,
      2,
      1,
    ).toError();
    h.target.units[0]!.reject(leaderRefusal);
    await flush();
    expect(h.outcomes.get(a.id)).toEqual({ ok: false, error: leaderRefusal });
    expect(h.outcomes.get(b.id)).toEqual({ ok: false, error: leaderRefusal });
    expect(h.inUse()).toBe(0);
  });

  it("answers UnknownWriteOutcome for an untyped failure, a synchronous throw or a missing outcome", async () => {
    const h = new Harness();
    const a = h.submit("data");
    await flush();
    h.target.units[0]!.reject(new Error("socket hang up"));
    await flush();
    expect(h.outcomes.get(a.id)).toMatchObject({ ok: false, error: { reason: "ReplicationFailed" } });

    const b = h.submit("data");
    const c = h.submit("data");
    await flush();
    h.target.units[1]!.resolve([{ ok: true, value: "only one" }]);
    await flush();
    expect(h.outcomes.get(b.id)).toEqual({ ok: true, value: "only one" });
    expect(h.outcomes.get(c.id)).toMatchObject({ ok: false, error: { code: "UnknownWriteOutcome" } });

    const throwing = new CommandScheduler<Command, string>({
      replicate: () => {
        throw new TypeError("not connected");
      },
    });
    const governor = new CommandAdmissionGovernor();
    const reservation = governor.tryAdmit({
      lane: "data",
      tenantId: "t",
      principalId: "p",
      payload: payloadSize(""),
    });
    if (reservation instanceof AdmissionRefusal) throw new Error("refused");
    const outcome = await throwing.submit(reservation, { id: "x", lane: "data" });
    expect(outcome).toMatchObject({ ok: false, error: { code: "UnknownWriteOutcome" } });
    expect(!outcome.ok && outcome.error.cause).toBeInstanceOf(TypeError);
    expect(governor.usage("data").commands).toBe(0);
    expect(h.inUse()).toBe(0);
  });

  it("neither releases nor cancels a command whose caller went away", async () => {
    const h = new Harness();
    const reservation = h.reserve("data");
    const client = new AbortController();
    // How the HTTP layer waits: it stops waiting when its client disconnects.
    const gone = new Promise<"gone">((resolve) =>
      client.signal.addEventListener("abort", () => resolve("gone")),
    );
    const outcome = h.scheduler.submit(reservation, { id: "d1", lane: "data" });
    const answer = Promise.race([outcome, gone]);
    await flush();
    client.abort();
    expect(await answer).toBe("gone");
    await flush();
    expect(reservation.released).toBe(false);
    expect(h.governor.usage("data")).toMatchObject({ commands: 1, active: 1 });
    expect(h.target.units[0]!.signal.aborted).toBe(false);
    h.target.completeNext();
    expect(await outcome).toEqual({ ok: true, value: "applied d1" });
    expect(reservation.released).toBe(true);
    expect(h.inUse()).toBe(0);
  });

  it("on shutdown answers queued commands with UnknownWriteOutcome and releases them; the active unit keeps its own", async () => {
    const h = new Harness();
    const active = h.submit("data");
    await flush();
    const queued = [h.submit("data"), h.submit("control"), h.submit("data")];
    let exited = false;
    const shutdown = h.scheduler.shutdown().then(() => {
      exited = true;
    });
    await flush();
    for (const command of queued) {
      expect(h.outcomes.get(command.id)).toMatchObject({
        ok: false,
        error: { code: "UnknownWriteOutcome", reason: "ShuttingDown" },
      });
    }
    expect(h.scheduler.queued).toEqual({ data: 0, control: 0 });
    expect(h.governor.usage("data")).toMatchObject({ commands: 1, queued: 0, active: 1 });
    expect(h.governor.usage("control").commands).toBe(0);
    expect(exited).toBe(false);

    // Nothing new is queued while stopping.
    const late = h.reserve("control");
    const lateOutcome = await h.scheduler.submit(late, { id: "late", lane: "control" });
    expect(lateOutcome).toMatchObject({ ok: false, error: { code: "Unavailable", reason: "ShuttingDown" } });
    expect(!lateOutcome.ok && lateOutcome.error).toBeInstanceOf(UnavailableError);
    expect(late.released).toBe(true);

    h.target.completeNext();
    await shutdown;
    expect(exited).toBe(true);
    expect(h.outcomes.get(active.id)).toEqual({ ok: true, value: `applied ${active.id}` });
    expect(h.inUse()).toBe(0);
    expect(h.target.units).toHaveLength(1);
    expect(h.clock.pendingTimers).toBe(0);
    await h.scheduler.shutdown();
  });

  it("exits at once when idle, and after the deadline when the active unit hangs", async () => {
    const idle = new Harness();
    await idle.scheduler.shutdown();

    const h = new Harness({ replicationDeadlineMs: 500 });
    const hung = h.submit("data");
    await flush();
    const exited = h.shutdown();
    await flush();
    expect(exited()).toBe(false);
    expect(h.inUse()).toBe(1);
    h.clock.advance(500);
    await flush();
    expect(exited()).toBe(true);
    expect(h.outcomes.get(hung.id)).toMatchObject({ ok: false, error: { reason: "ReplicationDeadline" } });
    expect(h.inUse()).toBe(0);
  });

  it("refuses a reservation that was already released", () => {
    const h = new Harness();
    const reservation = h.reserve("data");
    reservation.release();
    expect(() => h.scheduler.submit(reservation, { id: "x", lane: "data" })).toThrow(ReservationStateError);
  });

  it("validates its options", () => {
    const target = new HeldTarget();
    expect(() => new CommandScheduler(target, { maxBatchCommands: 0 })).toThrow(AdmissionOptionError);
    expect(() => new CommandScheduler(target, { maxDataBytesWithControl: -1 })).toThrow(
      /maxDataBytesWithControl/,
    );
    expect(() => new CommandScheduler(target, { replicationDeadlineMs: 1.5 })).toThrow(
      /replicationDeadlineMs/,
    );
  });
});
