import { type Placed, placedRead, placedWrite, realTimeInversions } from "./version-order.js";
import { type Report, violationsOf } from "./violations.js";

/**
 * A linearizability check for versioned registers: catalog keys written by many writers, some of them
 * conditionally (`expectedVersion`), and read through any voter while faults are injected.
 *
 * A key's version counts the puts committed to it, so the versions are the order the cluster applied
 * them in, and the history is linearizable if and only if that order agrees with real time
 * (version-order.ts). Checking that needs no search (as a general checker such as Knossos or
 * Porcupine must make), so every operation of a long run is checked.
 *
 * Each write carries a value no other write carries (its command's number), so a read names the
 * write it saw. A write that was never answered (a crash, a timeout, retries given up) may still have
 * committed: its end is unknown, and only its start constrains it. After the faults, each command's
 * durable outcome (`GET /v1/commands/{id}`) tells whether and at which version it committed.
 */

/** A put of `n` (command `c<n>`) to `key`, unconditional or expecting `expectedVersion`. */
export interface WriteOp {
  readonly kind: "write";
  readonly key: string;
  readonly n: number;
  readonly expectedVersion?: number;
  /** When its first attempt was sent (`performance.now()`). */
  readonly start: number;
  /** When an attempt was answered with a version or a refusal; absent if none ever was. */
  end?: number;
  answer?: { readonly version: number } | "failed-precondition";
}

/** A read of `key` that was answered: the value and version it saw, or `absent` (404). */
export interface ReadOp {
  readonly kind: "read";
  readonly key: string;
  readonly start: number;
  readonly end: number;
  readonly seen: { readonly value: number; readonly version: number } | "absent";
  /** Which voter answered, for the report. */
  readonly via: string;
}

export type RegisterOp = WriteOp | ReadOp;

/** What a command's durable outcome says of it once the faults are over. */
export type WriteOutcome =
  | { readonly status: "committed"; readonly key: string; readonly version: number }
  | { readonly status: "failed"; readonly code: string }
  | { readonly status: "none" };

/** The document every voter holds at the end, the same on all of them. */
export interface FinalDocument {
  readonly value: number;
  readonly version: number;
}

/**
 * Everything in `ops` that no linearizable register could have answered, given each command's durable
 * `outcomes` (by `n`) and each key's `finals`; empty when the history is linearizable.
 */
export function registerViolations(
  ops: readonly RegisterOp[],
  outcomes: ReadonlyMap<number, WriteOutcome>,
  finals: ReadonlyMap<string, FinalDocument>,
): string[] {
  return violationsOf((report) => {
    const outcomeOf = (n: number): WriteOutcome => outcomes.get(n) ?? { status: "none" };

    for (const op of ops) {
      if (op.kind === "write") checkWriteAnswer(op, outcomeOf(op.n), report);
      else checkReadNamesItsWrite(op, outcomeOf, report);
    }
    for (const [key, keyOps] of byKey(ops)) {
      checkVersionsCountCommits(key, keyOps, outcomeOf, finals.get(key), report);
      checkRealTimeOrder(keyOps, outcomeOf, report);
    }
  });
}

/** An answer is durable: a version answered is the one the command committed at, and so is a refusal. */
function checkWriteAnswer(op: WriteOp, outcome: WriteOutcome, report: Report): void {
  const name = `write c${op.n} of ${op.key}`;
  if (outcome.status === "committed") {
    if (outcome.key !== op.key) report(`${name} committed to ${outcome.key}`);
    if (op.expectedVersion !== undefined && outcome.version !== op.expectedVersion + 1) {
      report(`${name} expected version ${op.expectedVersion} and committed at ${outcome.version}`);
    }
  }
  if (op.answer === undefined) return;
  if (op.answer === "failed-precondition") {
    if (outcome.status !== "failed" || outcome.code !== "FailedPrecondition") {
      report(`${name} was answered FailedPrecondition, and its outcome is ${describe(outcome)}`);
    }
  } else if (outcome.status !== "committed" || outcome.version !== op.answer.version) {
    report(`${name} was answered version ${op.answer.version}, and its outcome is ${describe(outcome)}`);
  }
}

/** A read saw what a committed write wrote, at the version that write committed at. */
function checkReadNamesItsWrite(op: ReadOp, outcomeOf: (n: number) => WriteOutcome, report: Report): void {
  if (op.seen === "absent") return;
  const outcome = outcomeOf(op.seen.value);
  if (outcome.status !== "committed" || outcome.key !== op.key || outcome.version !== op.seen.version) {
    report(
      `a read of ${op.key} through ${op.via} saw value ${op.seen.value} at version ${op.seen.version}, ` +
        `and write c${op.seen.value}'s outcome is ${describe(outcome)}`,
    );
  }
}

/**
 * The key's committed writes hold versions 1..N once each, and every voter ends at version N holding
 * the value of the write that committed at N: no write lost, none applied twice, none beside another.
 */
function checkVersionsCountCommits(
  key: string,
  keyOps: readonly RegisterOp[],
  outcomeOf: (n: number) => WriteOutcome,
  final: FinalDocument | undefined,
  report: Report,
): void {
  const atVersion = new Map<number, number>();
  for (const op of keyOps) {
    if (op.kind !== "write") continue;
    const outcome = outcomeOf(op.n);
    if (outcome.status !== "committed" || outcome.key !== key) continue;
    const other = atVersion.get(outcome.version);
    if (other !== undefined)
      report(`writes c${other} and c${op.n} both committed ${key} at ${outcome.version}`);
    atVersion.set(outcome.version, op.n);
  }
  const last = final?.version ?? 0;
  if (atVersion.size !== last) {
    report(`${key} ends at version ${last}, and ${atVersion.size} of its writes committed`);
  }
  for (let version = 1; version <= last; version++) {
    if (!atVersion.has(version)) report(`no write of ${key} committed at version ${version}`);
  }
  const lastWrite = final === undefined ? undefined : atVersion.get(final.version);
  if (final !== undefined && lastWrite !== undefined && lastWrite !== final.value) {
    report(`${key} ends with value ${final.value} at version ${final.version}, which c${lastWrite} wrote`);
  }
}

/** No operation that ended before another began is later than it in the version order. */
function checkRealTimeOrder(
  keyOps: readonly RegisterOp[],
  outcomeOf: (n: number) => WriteOutcome,
  report: Report,
): void {
  const placed: Placed[] = [];
  for (const op of keyOps) {
    if (op.kind === "read") {
      const version = op.seen === "absent" ? 0 : op.seen.version;
      const saw = op.seen === "absent" ? "nothing" : `version ${version}`;
      placed.push(placedRead(version, op.start, op.end, `a read through ${op.via} that saw ${saw}`));
      continue;
    }
    const outcome = outcomeOf(op.n);
    if (outcome.status !== "committed" || outcome.key !== op.key) continue;
    const end = op.answer === undefined ? undefined : op.end;
    placed.push(placedWrite(outcome.version, op.start, end, `write c${op.n} (version ${outcome.version})`));
  }
  realTimeInversions(keyOps[0]!.key, placed, report);
}

function byKey(ops: readonly RegisterOp[]): Map<string, RegisterOp[]> {
  const keys = new Map<string, RegisterOp[]>();
  for (const op of ops) {
    const list = keys.get(op.key);
    if (list) list.push(op);
    else keys.set(op.key, [op]);
  }
  return keys;
}

function describe(outcome: WriteOutcome): string {
  switch (outcome.status) {
    case "committed":
      return `committed to ${outcome.key} at version ${outcome.version}`;
    case "failed":
      return `failed (${outcome.code})`;
    default:
      return "never committed";
  }
}
