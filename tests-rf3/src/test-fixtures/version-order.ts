import type { Report } from "./violations.js";

/**
 * A key's versions order the writes that made them, and a read that saw version v sits after the write
 * that made v and before the one that made v + 1. A history is linearizable for that key if and only
 * if this order agrees with real time: no operation that ended before another began is later than it.
 * The histories' checks (register-history.ts, bank-history.ts) place their operations here.
 */

/** An operation placed in one key's version order, with the real-time interval it was in flight. */
export interface Placed {
  /** 2v for the write that made version v, 2v + 1 for a read that saw v: reads after the write. */
  readonly place: number;
  readonly start: number;
  /** Infinity when it was never answered: it may have taken effect at any time after its start. */
  readonly end: number;
  /** How a report names it. */
  readonly name: string;
}

export function placedWrite(version: number, start: number, end: number | undefined, name: string): Placed {
  return { place: 2 * version, start, end: end ?? Number.POSITIVE_INFINITY, name };
}

export function placedRead(version: number, start: number, end: number, name: string): Placed {
  return { place: 2 * version + 1, start, end, name };
}

/**
 * Reports each operation that began after another had ended yet comes before it in `key`'s version
 * order. A sweep over the operations by start keeps the latest place among those already ended.
 */
export function realTimeInversions(key: string, placed: readonly Placed[], report: Report): void {
  const byStart = [...placed].sort((a, b) => a.start - b.start);
  const byEnd = [...placed].sort((a, b) => a.end - b.end);
  let ended = 0;
  let latest: Placed | undefined;
  for (const op of byStart) {
    while (ended < byEnd.length && byEnd[ended]!.end < op.start) {
      const done = byEnd[ended++]!;
      if (latest === undefined || done.place > latest.place) latest = done;
    }
    if (latest !== undefined && latest.place > op.place) {
      report(
        `${key}: ${latest.name} ended before ${op.name} began, yet the first is later in the version order`,
      );
    }
  }
}
