import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loggedFailStop } from "./voter-failure.js";
import { appendNote } from "./voter-log-file.js";

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function logFile(): string {
  dir = mkdtempSync(join(tmpdir(), "keyload-failure-"));
  return join(dir, "voter1.log");
}

const voterLine = (fields: Record<string, unknown>): string =>
  `${JSON.stringify({ level: 30, time: 1_800_000_000_000, nodeId: "voter1", ...fields })}\n`;

describe("a detached voter's fail-stop, read from its log", () => {
  it("is the last run's fail-stop line, with that run's lines", () => {
    const file = logFile();
    appendNote(file, "voter1", "starting voter1 detached");
    appendFileSync(file, voterLine({ msg: "voter started" }));
    appendFileSync(file, voterLine({ failStop: true, exitCode: 3, level: 60, msg: "exiting" }));
    const failure = loggedFailStop(file, 25);
    expect(failure).toMatchObject({ exit: "exited with code 3", at: "2027-01-15T08:00:00.000Z" });
    expect(failure?.lastLines).toHaveLength(2);
  });

  it("is none once the voter was started again, or when its run logged none", () => {
    const file = logFile();
    appendNote(file, "voter1", "starting voter1 detached");
    appendFileSync(file, voterLine({ failStop: true, exitCode: 3, level: 60, msg: "exiting" }));
    appendNote(file, "voter1", "starting voter1 detached");
    appendFileSync(file, voterLine({ msg: "voter started" }));
    expect(loggedFailStop(file, 25)).toBeNull();
    expect(loggedFailStop(join(dir!, "missing.log"), 25)).toBeNull();
  });
});
