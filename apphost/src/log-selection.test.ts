import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type LogSelection, mergedLines, type SelectedLog, selectLog } from "./log-selection.js";
import { lastLines, linesBefore, linesBetween, readFrom } from "./voter-log-file.js";

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "keyload-log-selection-"));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function line(time: number, msg: string, pad = ""): string {
  return JSON.stringify({ level: 30, time, nodeId: "v", msg, pad });
}

function writeLog(name: string, lines: readonly string[], unfinished = ""): string {
  const file = join(dir, `${name}.log`);
  writeFileSync(file, lines.map((l) => `${l}\n`).join("") + unfinished);
  return file;
}

function shownMessages(logs: readonly SelectedLog[], selection: LogSelection): string[] {
  return [...mergedLines(logs, selection)].map(({ voter, line: text }) => {
    const parsed = ((): { msg?: string } | undefined => {
      try {
        return JSON.parse(text) as { msg?: string };
      } catch {
        return undefined;
      }
    })();
    return `${voter}:${parsed?.msg ?? text}`;
  });
}

const everything: LogSelection = { shown: () => true };

describe("reading a voter's log in chunks", () => {
  it("reads lines across chunk boundaries both ways, and leaves a line being written alone", () => {
    // Two-byte characters, so chunk boundaries fall inside characters as well as inside lines.
    const lines = Array.from({ length: 3000 }, (_, i) => line(1_000 + i, `m${i}`, "é".repeat(i % 97)));
    const unfinished = '{"level":30,"time":99999,"msg":"half';
    const file = writeLog("voter1", lines, unfinished);
    const end = statSync(file).size - Buffer.byteLength(unfinished);

    expect([...linesBetween(file, 0, end)]).toEqual(lines);
    const backwards = [...linesBefore(file, statSync(file).size)];
    expect(backwards.map((l) => l.line).reverse()).toEqual(lines);
    expect(backwards[0]!.next).toBe(end);
    expect(backwards.at(-1)!.offset).toBe(0);

    const tail = selectLog("voter1", file, { ...everything, tail: 3 });
    expect(tail.end).toBe(end);
    expect(shownMessages([tail], { ...everything, tail: 3 })).toEqual([
      "voter1:m2997",
      "voter1:m2998",
      "voter1:m2999",
    ]);
  });

  it("reads a bounded piece for a follower, ending at a line so no character is split", () => {
    const file = writeLog("voter3", ["aé", "bé", "cé"]);
    // Each line is 4 bytes with its newline; 10 bytes end inside the third line.
    expect(readFrom(file, 0, 10)).toEqual({ text: "aé\nbé\n", end: 8 });
    expect(readFrom(file, 8, 10)).toEqual({ text: "cé\n", end: 12 });
    expect(readFrom(file, 12, 10)).toEqual({ text: "", end: 12 });
  });

  it("gives the last lines of a run, the one still being written included", () => {
    const lines = Array.from({ length: 2000 }, (_, i) => line(i, `m${i}`, "x".repeat(50)));
    const file = writeLog("voter2", lines, "half a line");
    expect(lastLines(file, 3)).toEqual([lines[1998], lines[1999], "half a line"]);
    const lastRun = Buffer.byteLength(
      lines
        .slice(0, 1999)
        .map((l) => `${l}\n`)
        .join(""),
    );
    expect(lastLines(file, 25, lastRun)).toEqual([lines[1999], "half a line"]);
  });
});

describe("selecting the lines `logs` prints", () => {
  it("keeps the lines since a time, merging voters by time; a line without one follows its predecessor", () => {
    const voter1 = writeLog("voter1", [line(1_000, "a"), line(3_000, "c"), line(5_000, "e")]);
    const voter2 = writeLog("voter2", [line(2_000, "b"), line(4_000, "d"), "not json", line(6_000, "f")]);
    const selection: LogSelection = { ...everything, notBefore: 2_500 };
    const logs = [selectLog("voter1", voter1, selection), selectLog("voter2", voter2, selection)];
    expect(shownMessages(logs, selection)).toEqual([
      "voter1:c",
      "voter2:d",
      "voter2:not json",
      "voter1:e",
      "voter2:f",
    ]);
  });

  it("takes the last lines of all voters together, counting only the lines shown", () => {
    const voter1 = writeLog("voter1", [line(1_000, "a"), line(3_000, "c"), line(7_000, "probe")]);
    const voter2 = writeLog("voter2", [line(2_000, "b"), line(4_000, "d"), line(8_000, "probe")]);
    const selection: LogSelection = { shown: (l) => !l.includes("probe"), tail: 3 };
    const logs = [selectLog("voter1", voter1, selection), selectLog("voter2", voter2, selection)];
    expect(shownMessages(logs, selection)).toEqual(["voter2:b", "voter1:c", "voter2:d"]);
  });

  it("shows nothing of a log that is not there yet, and follows it from its start", () => {
    const missing = selectLog("voter3", join(dir, "voter3.log"), { ...everything, tail: 5 });
    expect(missing).toMatchObject({ start: 0, end: 0, count: 0 });
    expect(shownMessages([missing], everything)).toEqual([]);
  });
});
