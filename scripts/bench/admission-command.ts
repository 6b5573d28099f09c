/**
 * Command admission throughput: admit + release pairs per second on one thread with 1,000 tenants x 10
 * principals, the cost of a refusal next to an admission, and the command scheduler's per-command cost
 * with a replication target that answers at once. Rates are per CPU second, as the machine may be shared.
 *
 *   pnpm --filter @keyload/scripts exec tsx --conditions=source bench/admission-command.ts [--pairs N] [--commands N]
 */
import { parseArgs } from "node:util";
import {
  AdmissionRefusal,
  CommandAdmissionGovernor,
  type CommandOutcome,
  type CommandReservation,
  CommandScheduler,
  type PayloadSize,
  payloadSize,
} from "@keyload/node/admission";
import {
  type PerOperation,
  PRINCIPALS_PER_TENANT,
  type Scope,
  scopes,
  sink,
  stopwatch,
  TENANTS,
  visitOrder,
} from "./admission-fixtures.js";
import { scriptArgs } from "./script-args.js";

/** Reservations held at once: admissions and releases interleave as they would under load. */
const WINDOW = 128;

/** The sizes of four payloads, as the edge measures them when it reads a body. */
const PAYLOADS: readonly PayloadSize[] = [
  '{"value":{"name":"widget","count":12,"tags":["a","b"]},"expectedVersion":4}',
  '{"value":"Grüße aus Köln — ümlaut and em dash"}',
  '{"value":"astral 😀 payload"}',
  "",
].map(payloadSize);

export interface CommandAdmissionBenchResult {
  pairs: number;
  pair: PerOperation;
  countRefusal: PerOperation;
  principalRefusal: PerOperation;
  refusalError: PerOperation;
  schedulerCommands: number;
  scheduler: PerOperation;
  schedulerUnbatched: PerOperation;
}

function admitOrThrow(
  governor: CommandAdmissionGovernor,
  lane: "data" | "control",
  scope: Scope,
  payload: PayloadSize,
): CommandReservation {
  const result = governor.tryAdmit({
    lane,
    tenantId: scope.tenantId,
    principalId: scope.principalId,
    payload,
  });
  if (result instanceof AdmissionRefusal) throw new Error(`benchmark admission refused: ${result.message}`);
  return result;
}

function measurePairs(pairs: number, all: Scope[]): PerOperation {
  const governor = new CommandAdmissionGovernor();
  const order = visitOrder(all.length);
  const held: (CommandReservation | undefined)[] = new Array(WINDOW).fill(undefined);
  const stop = stopwatch();
  for (let i = 0; i < pairs; i++) {
    const slot = i % WINDOW;
    held[slot]?.release();
    held[slot] = admitOrThrow(governor, "data", all[order[i & 0xffff]!]!, PAYLOADS[i & 3]!);
  }
  const perPair = stop(pairs);
  for (const r of held) r?.release();
  return perPair;
}

function measureRefusals(count: number, all: Scope[]) {
  // The data lane full by count: refused at its first check.
  const full = new CommandAdmissionGovernor();
  for (let i = 0; i < 256; i++) admitOrThrow(full, "data", all[i]!, PAYLOADS[0]!);
  // One principal at its cap with room elsewhere: refused at the last check, after every lookup.
  const capped = new CommandAdmissionGovernor();
  for (let i = 0; i < 64; i++) admitOrThrow(capped, "data", all[0]!, PAYLOADS[0]!);
  let refusals = 0;
  let stop = stopwatch();
  for (let i = 0; i < count; i++) {
    const result = full.tryAdmit({ lane: "data", ...all[i % all.length]!, payload: PAYLOADS[i & 3]! });
    if (result instanceof AdmissionRefusal) refusals++;
    sink[i & 63] = result;
  }
  const countRefusal = stop(count);
  stop = stopwatch();
  for (let i = 0; i < count; i++) {
    const result = capped.tryAdmit({ lane: "data", ...all[0]!, payload: PAYLOADS[i & 3]! });
    if (result instanceof AdmissionRefusal) refusals++;
    sink[i & 63] = result;
  }
  const principalRefusal = stop(count);
  const errors = Math.max(1, Math.floor(count / 10));
  stop = stopwatch();
  for (let i = 0; i < errors; i++) {
    const result = full.tryAdmit({ lane: "data", ...all[i % all.length]!, payload: PAYLOADS[0]! });
    if (result instanceof AdmissionRefusal) {
      const error = result.toError();
      if (error.status === 429) refusals++;
      sink[i & 63] = error;
    }
  }
  const refusalError = stop(errors);
  if (refusals !== 2 * count + errors) throw new Error("a benchmark admission was not refused");
  return { countRefusal, principalRefusal, refusalError };
}

interface BenchCommand {
  readonly n: number;
}

/**
 * Pushes `commands` through admission, the command scheduler and release, in rounds that fill both
 * lanes.
 */
async function measureScheduler(
  commands: number,
  all: Scope[],
  maxBatchCommands: number,
): Promise<PerOperation> {
  const outcome: CommandOutcome<number> = { ok: true, value: 1 };
  const answers: (readonly CommandOutcome<number>[])[] = [];
  for (let n = 0; n <= maxBatchCommands; n++) answers.push(new Array(n).fill(outcome));
  const governor = new CommandAdmissionGovernor();
  const scheduler = new CommandScheduler<BenchCommand, number>(
    { replicate: (batch) => Promise.resolve(answers[batch.length]!) },
    { maxBatchCommands },
  );
  const order = visitOrder(all.length);
  const dataPerRound = 256;
  const perRound = dataPerRound + 16;
  let submitted = 0;
  const stop = stopwatch();
  while (submitted < commands) {
    let waiting = perRound;
    await new Promise<void>((resolve) => {
      const done = (result: CommandOutcome<number>) => {
        if (!result.ok) throw result.error;
        if (--waiting === 0) resolve();
      };
      for (let i = 0; i < perRound; i++) {
        const lane = i < dataPerRound ? "data" : "control";
        const scope = all[order[submitted++ & 0xffff]!]!;
        scheduler.submit(admitOrThrow(governor, lane, scope, PAYLOADS[i & 3]!), { n: i }).then(done);
      }
    });
  }
  const perCommand = stop(submitted);
  await scheduler.shutdown();
  return perCommand;
}

export async function runCommandAdmissionBench(
  pairs: number,
  commands: number,
): Promise<CommandAdmissionBenchResult> {
  const all = scopes();
  const pair = measurePairs(pairs, all);
  const refusals = measureRefusals(Math.max(1, Math.floor(pairs / 4)), all);
  const schedulerCommands = Math.ceil(commands / 272) * 272;
  const scheduler = await measureScheduler(schedulerCommands, all, 64);
  const schedulerUnbatched = await measureScheduler(schedulerCommands, all, 1);
  return { pairs, pair, ...refusals, schedulerCommands, scheduler, schedulerUnbatched };
}

const ns = (n: number) => `${n.toFixed(0)} ns`;

export function formatCommandAdmissionBench(r: CommandAdmissionBenchResult): string {
  const perCpuSecond = 1e9 / r.pair.cpuNs;
  const worstRefusal = Math.max(r.countRefusal.cpuNs, r.principalRefusal.cpuNs);
  return [
    `admission-command: ${r.pairs} admit+release pairs over ${TENANTS} tenants x ${PRINCIPALS_PER_TENANT} principals, ${WINDOW} held at once`,
    `  pairs per CPU second: ${Math.round(perCpuSecond)} (target >= 3000000, ratio ${(perCpuSecond / 3_000_000).toFixed(2)}); ${ns(r.pair.cpuNs)} CPU, ${ns(r.pair.wallNs)} wall per pair`,
    `  refusal: ${ns(r.countRefusal.cpuNs)} at the count check, ${ns(r.principalRefusal.cpuNs)} at the principal check (worst/pair ${(worstRefusal / r.pair.cpuNs).toFixed(2)}, target <= 1); building its ResourceExhaustedError ${ns(r.refusalError.cpuNs)}`,
    `  command scheduler, ${r.schedulerCommands} commands admitted, scheduled, answered and released: ${ns(r.scheduler.cpuNs)} CPU per command in units of up to 64, of which ${ns(r.scheduler.cpuNs - r.pair.cpuNs)} beyond admit+release (target <= 1000); ${ns(r.schedulerUnbatched.cpuNs)} with one command per unit`,
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    args: scriptArgs(),
    options: {
      pairs: { type: "string", default: "5000000" },
      commands: { type: "string", default: "1000000" },
    },
  });
  // A short warm-up lets the JIT settle before the measured run.
  await runCommandAdmissionBench(200_000, 50_000);
  console.log(
    formatCommandAdmissionBench(
      await runCommandAdmissionBench(Number(values.pairs), Number(values.commands)),
    ),
  );
}
