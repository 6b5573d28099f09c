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

/** The bytes of the file from `offset` to its end, at most `maxBytes` of them, as text. */
export function readFrom(
  file: string,
  offset: number,
  maxBytes = Number.POSITIVE_INFINITY,
): { text: string; end: number } {
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
    const buffer = Buffer.alloc(Math.min(size - from, maxBytes));
    let read = 0;
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, from + read);
      if (n === 0) break;
      read += n;
    }
    let bytes = buffer.subarray(0, read);
    // A piece cut short ends at its last newline, so no character is split between two pieces.
    if (from + read < size) {
      const newline = bytes.lastIndexOf(0x0a);
      if (newline >= 0) bytes = bytes.subarray(0, newline + 1);
    }
    return { text: bytes.toString("utf8"), end: from + bytes.length };
  } finally {
    closeSync(fd);
  }
}

/** The last `count` lines written at or after `offset` that `keep` keeps, read from the end of the file. */
export function lastLines(
  file: string,
  count: number,
  offset = 0,
  keep: (line: string) => boolean = () => true,
): string[] {
  const end = Math.max(completeEnd(file), offset);
  // A line not ended (a voter that died while writing it) is its last word.
  const unfinished = readFrom(file, end).text;
  const lines = unfinished === "" ? [] : [unfinished];
  for (const { line, offset: start } of linesBefore(file, end)) {
    if (lines.length >= count || start < offset) break;
    if (keep(line)) lines.push(line);
  }
  return lines.reverse();
}

/** How much of a log is read at once when it is read in pieces. */
const CHUNK_BYTES = 64 * 1024;
const NEWLINE = 0x0a;

function readChunk(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.alloc(length);
  let read = 0;
  while (read < length) {
    const n = readSync(fd, buffer, read, length - read, position + read);
    if (n === 0) break;
    read += n;
  }
  return buffer.subarray(0, read);
}

function* withFile<T>(file: string, read: (fd: number) => Generator<T>): Generator<T> {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    return;
  }
  try {
    yield* read(fd);
  } finally {
    closeSync(fd);
  }
}

/** Where the file's last complete line ends (0 when it has none): what a reader may take as written. */
export function completeEnd(file: string): number {
  const size = logSize(file);
  for (const { next } of linesBefore(file, size)) return next;
  return 0;
}

/**
 * The lines of the file between byte offsets `start` and `end` (both at line boundaries), first to
 * last, read a chunk at a time so a long log is never held whole.
 */
export function linesBetween(file: string, start: number, end: number): Generator<string> {
  return withFile(file, function* (fd) {
    let carry = Buffer.alloc(0);
    for (let position = start; position < end; ) {
      const chunk = readChunk(fd, position, Math.min(CHUNK_BYTES, end - position));
      if (chunk.length === 0) return;
      position += chunk.length;
      const data = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
      let from = 0;
      for (let nl = data.indexOf(NEWLINE); nl >= 0; nl = data.indexOf(NEWLINE, from)) {
        yield data.toString("utf8", from, nl);
        from = nl + 1;
      }
      carry = Buffer.from(data.subarray(from));
    }
  });
}

/**
 * The complete lines that end before byte offset `end`, last first, each with the offset it starts at
 * and the offset just after its newline; read backwards a chunk at a time. A line not ended by a
 * newline before `end` (one being written) is skipped.
 */
export function linesBefore(
  file: string,
  end: number,
): Generator<{ readonly line: string; readonly offset: number; readonly next: number }> {
  return withFile(file, function* (fd) {
    // The bytes of a line whose start has not been read yet; null until the first newline is found.
    let carry: Buffer | null = null;
    let carryEnd = end;
    for (let position = end; position > 0; ) {
      const length = Math.min(CHUNK_BYTES, position);
      position -= length;
      const chunk = readChunk(fd, position, length);
      const data: Buffer = carry === null ? chunk : Buffer.concat([chunk, carry]);
      let lineEnd: number = carry === null ? -1 : data.length;
      for (
        let nl = data.lastIndexOf(NEWLINE);
        nl >= 0;
        nl = nl > 0 ? data.lastIndexOf(NEWLINE, nl - 1) : -1
      ) {
        if (lineEnd >= 0) {
          yield { line: data.toString("utf8", nl + 1, lineEnd), offset: position + nl + 1, next: carryEnd };
        }
        lineEnd = nl;
        carryEnd = position + nl + 1;
      }
      carry = lineEnd < 0 ? null : Buffer.from(data.subarray(0, lineEnd));
    }
    if (carry !== null) yield { line: carry.toString("utf8"), offset: 0, next: carryEnd };
  });
}
