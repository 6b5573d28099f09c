import { appendFileSync, closeSync, mkdirSync, openSync, readSync, statSync } from "node:fs";
import { dirname } from "node:path";

/**
 * A voter's log file in the state dir: the voter writes its stdout and stderr there directly, so the
 * log survives the AppHost, and the AppHost reads it back for the console, `logs` and error reports.
 */
export function logSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** Opens the file for the voter's stdout and stderr, appending. The caller closes the descriptor. */
export function openForAppend(file: string): number {
  mkdirSync(dirname(file), { recursive: true });
  return openSync(file, "a", 0o600);
}

/** Appends one line of the AppHost's own, in the voter's JSON line format, marking a start or a stop. */
export function appendNote(file: string, voter: string, msg: string): void {
  mkdirSync(dirname(file), { recursive: true });
  appendFileSync(
    file,
    `${JSON.stringify({ level: 30, time: Date.now(), nodeId: voter, source: "apphost", msg })}\n`,
    {
      mode: 0o600,
    },
  );
}

/** The bytes of the file from `offset` to its end, as text. */
export function readFrom(file: string, offset: number): { text: string; end: number } {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    return { text: "", end: offset };
  }
  try {
    const size = statSync(file).size;
    // A wiped state dir starts the file over.
    const from = size < offset ? 0 : offset;
    const buffer = Buffer.alloc(size - from);
    let read = 0;
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, from + read);
      if (n === 0) break;
      read += n;
    }
    return { text: buffer.subarray(0, read).toString("utf8"), end: from + read };
  } finally {
    closeSync(fd);
  }
}

/** The last `count` lines written at or after `offset`. */
export function lastLines(file: string, count: number, offset = 0): string[] {
  const lines = readFrom(file, offset).text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines.slice(-count);
}
