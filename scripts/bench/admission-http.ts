/**
 * HTTP admission throughput: reserve + bind + dispose per second on one thread with 1,000 tenants x 10
 * principals, and the cost of a refusal next to an admission. Rates are per CPU second, as the machine
 * may be shared.
 *
 *   pnpm --filter @keyload/scripts exec tsx --conditions=source bench/admission-http.ts [--pairs N]
 */
import { parseArgs } from "node:util";
import {
  AdmissionRefusal,
  HttpAdmissionGovernor,
  type HttpRequestKind,
  type HttpReservation,
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

/** Requests in flight at once, within the data pool's 32 slots. */
const WINDOW = 16;

/** Mostly ordinary data requests with known lengths, some heavy reads and some chunked bodies. */
const KINDS: readonly HttpRequestKind[] = ["data", "data", "heavy", "data"];
const LENGTHS: readonly (number | undefined)[] = [0, 512, 2048, undefined];

export interface HttpAdmissionBenchResult {
  pairs: number;
  pair: PerOperation;
  slotRefusal: PerOperation;
  bindRefusal: PerOperation;
}

function reserveOrThrow(governor: HttpAdmissionGovernor, i: number): HttpReservation {
  const result = governor.reserve({ kind: KINDS[i & 3]!, declaredLength: LENGTHS[(i >> 2) & 3] });
  if (result instanceof AdmissionRefusal) throw new Error(`benchmark reservation refused: ${result.message}`);
  return result;
}

function measurePairs(pairs: number, all: Scope[]): PerOperation {
  const governor = new HttpAdmissionGovernor();
  const order = visitOrder(all.length);
  const held: (HttpReservation | undefined)[] = new Array(WINDOW).fill(undefined);
  const stop = stopwatch();
  for (let i = 0; i < pairs; i++) {
    const slot = i % WINDOW;
    held[slot]?.dispose();
    const reservation = reserveOrThrow(governor, i);
    const scope = all[order[i & 0xffff]!]!;
    if (reservation.bind(scope.tenantId, scope.principalId) !== undefined)
      throw new Error("benchmark bind refused");
    held[slot] = reservation;
  }
  const perPair = stop(pairs);
  for (const r of held) r?.dispose();
  return perPair;
}

function measureRefusals(count: number, all: Scope[]) {
  const full = new HttpAdmissionGovernor();
  for (let i = 0; i < 32; i++) reserveOrThrow(full, 0);
  let refusals = 0;
  let stop = stopwatch();
  for (let i = 0; i < count; i++) {
    const result = full.reserve({ kind: KINDS[i & 3]!, declaredLength: LENGTHS[(i >> 2) & 3] });
    if (result instanceof AdmissionRefusal) refusals++;
    sink[i & 63] = result;
  }
  const slotRefusal = stop(count);
  // A principal at its cap: the slot is reserved, then the bind is refused and everything released.
  const capped = new HttpAdmissionGovernor();
  const scope = all[0]!;
  for (let i = 0; i < 8; i++) reserveOrThrow(capped, 0).bind(scope.tenantId, scope.principalId);
  stop = stopwatch();
  for (let i = 0; i < count; i++) {
    const refusal = reserveOrThrow(capped, i).bind(scope.tenantId, scope.principalId);
    if (refusal !== undefined) refusals++;
    sink[i & 63] = refusal;
  }
  const bindRefusal = stop(count);
  if (refusals !== 2 * count) throw new Error("a benchmark request was not refused");
  return { slotRefusal, bindRefusal };
}

export function runHttpAdmissionBench(pairs: number): HttpAdmissionBenchResult {
  const all = scopes();
  const pair = measurePairs(pairs, all);
  return { pairs, pair, ...measureRefusals(Math.max(1, Math.floor(pairs / 4)), all) };
}

const ns = (n: number) => `${n.toFixed(0)} ns`;

export function formatHttpAdmissionBench(r: HttpAdmissionBenchResult): string {
  const perCpuSecond = 1e9 / r.pair.cpuNs;
  const worstRefusal = Math.max(r.slotRefusal.cpuNs, r.bindRefusal.cpuNs);
  return [
    `admission-http: ${r.pairs} reserve+bind+dispose over ${TENANTS} tenants x ${PRINCIPALS_PER_TENANT} principals, ${WINDOW} in flight`,
    `  admissions per CPU second: ${Math.round(perCpuSecond)} (target >= 1000000, ratio ${(perCpuSecond / 1_000_000).toFixed(2)}); ${ns(r.pair.cpuNs)} CPU, ${ns(r.pair.wallNs)} wall each`,
    `  refusal: ${ns(r.slotRefusal.cpuNs)} with every slot taken, ${ns(r.bindRefusal.cpuNs)} for a reserve whose bind is refused (worst/admission ${(worstRefusal / r.pair.cpuNs).toFixed(2)}, target <= 1)`,
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    args: scriptArgs(),
    options: { pairs: { type: "string", default: "5000000" } },
  });
  // A short warm-up lets the JIT settle before the measured run.
  runHttpAdmissionBench(200_000);
  console.log(formatHttpAdmissionBench(runHttpAdmissionBench(Number(values.pairs))));
}
