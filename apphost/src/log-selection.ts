import { completeEnd, linesBefore, linesBetween } from "./voter-log-file.js";

/** Which lines of the voters' logs `logs` prints. */
export interface LogSelection {
  /** Whether a line is shown at all (health probes are not, unless raw). */
  readonly shown: (line: string) => boolean;
  /** At most this many lines, the last ones, of all the voters' together. */
  readonly tail?: number;
  /** Lines whose pino `time` (ms since the epoch) is earlier are left out. */
  readonly notBefore?: number;
}

/** The part of one voter's log that holds its selected lines. */
export interface SelectedLog {
  readonly voter: string;
  readonly file: string;
  readonly start: number;
  /** The end of its last complete line when it was read: where following it begins. */
  readonly end: number;
  /** How many selected lines lie between start and end. */
  readonly count: number;
}

/** A line's pino `time`, undefined for a line without one. */
export function timeOf(line: string): number | undefined {
  const match = /"time":(\d+)/.exec(line);
  return match ? Number(match[1]) : undefined;
}

function isSelected(line: string, selection: LogSelection): boolean {
  if (!selection.shown(line)) return false;
  const time = selection.notBefore === undefined ? undefined : timeOf(line);
  return time === undefined || time >= selection.notBefore!;
}

/**
 * Finds where a voter's selected lines begin by reading its log backwards from the end, so `--tail`
 * and `--since` read only what they print. A voter writes its lines in time order: the first line
 * (from the end) older than `notBefore` ends the search.
 */
export function selectLog(voter: string, file: string, selection: LogSelection): SelectedLog {
  const end = completeEnd(file);
  // Everything is selected from the start; the count matters to a tail only.
  if (selection.tail === undefined && selection.notBefore === undefined) {
    return { voter, file, start: 0, end, count: 0 };
  }
  let start = end;
  let count = 0;
  for (const { line, offset } of linesBefore(file, end)) {
    if (selection.tail !== undefined && count >= selection.tail) break;
    const time = selection.notBefore === undefined ? undefined : timeOf(line);
    if (time !== undefined && time < selection.notBefore!) break;
    start = offset;
    if (isSelected(line, selection)) count++;
  }
  return { voter, file, start, end, count };
}

/**
 * The selected lines of several voters' logs in the order of their `time` (a line without one stays
 * after its predecessor), read forward a chunk at a time and merged as they are read.
 */
export function* mergedLines(
  logs: readonly SelectedLog[],
  selection: LogSelection,
): Generator<{ readonly voter: string; readonly line: string }> {
  const readers = logs.map((log) => ({ log, lines: linesBetween(log.file, log.start, log.end), time: 0 }));
  const heads = readers.map((reader) => next(reader));
  // The voters' last lines together may be more than the tail asks for: the earliest are skipped.
  const total = logs.reduce((sum, log) => sum + log.count, 0);
  let skip = selection.tail === undefined ? 0 : Math.max(0, total - selection.tail);
  for (;;) {
    let first = -1;
    for (let i = 0; i < heads.length; i++) {
      const head = heads[i];
      if (head !== undefined && (first < 0 || head.time < heads[first]!.time)) first = i;
    }
    if (first < 0) return;
    const head = heads[first]!;
    heads[first] = next(readers[first]!);
    if (skip > 0) skip--;
    else yield { voter: readers[first]!.log.voter, line: head.line };
  }

  function next(reader: (typeof readers)[number]): { line: string; time: number } | undefined {
    for (let item = reader.lines.next(); !item.done; item = reader.lines.next()) {
      if (!isSelected(item.value, selection)) continue;
      reader.time = timeOf(item.value) ?? reader.time;
      return { line: item.value, time: reader.time };
    }
    return undefined;
  }
}
