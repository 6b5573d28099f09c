import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DataDirLockedError, lockDataDir } from "./data-dir-lock.js";

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe("lockDataDir", () => {
  it("refuses a directory a live process holds, and frees it on release", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-lock-"));
    // The parent of this test process is alive and is not us.
    writeFileSync(join(dir, "voter.lock"), String(process.ppid));
    expect(() => lockDataDir(dir!)).toThrow(DataDirLockedError);
    rmSync(join(dir, "voter.lock"));
    const release = lockDataDir(dir);
    expect(readFileSync(join(dir, "voter.lock"), "utf8")).toBe(String(process.pid));
    release();
    lockDataDir(dir)();
  });

  it("takes over a lock left by a process that no longer exists", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-lock-"));
    const gone = spawnSync(process.execPath, [
      "-e",
      "process.stdout.write(String(process.pid))",
    ]).stdout.toString();
    writeFileSync(join(dir, "voter.lock"), gone);
    const release = lockDataDir(dir);
    expect(readFileSync(join(dir, "voter.lock"), "utf8")).toBe(String(process.pid));
    release();
  });
});
