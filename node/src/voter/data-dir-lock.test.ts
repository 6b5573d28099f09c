import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { DataDirLockedError, lockDataDir } from "./data-dir-lock.js";
import { killProcess } from "./test-fixtures/voter-process.js";

let dir: string | undefined;
let holder: ChildProcess | undefined;
afterEach(async () => {
  if (holder) await killProcess(holder);
  holder = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** Another process that takes the lock on `lockDir` and keeps it until killed. */
async function holdInAnotherProcess(lockDir: string): Promise<ChildProcess> {
  const module = new URL("./data-dir-lock.ts", import.meta.url).href;
  // It drops the release function and collects its garbage: the lock must outlive both.
  const code = `import(${JSON.stringify(module)}).then((m) => { m.lockDataDir(${JSON.stringify(lockDir)}); gc(); console.log("locked"); setInterval(() => {}, 1000); });`;
  const child = spawn(process.execPath, ["--expose-gc", "--import", "tsx", "-e", code], {
    // Where tsx resolves from: the node package.
    cwd: fileURLToPath(new URL("../..", import.meta.url)),
    stdio: ["ignore", "pipe", "pipe"],
  });
  await new Promise<void>((resolve, reject) => {
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdout?.on("data", (d: Buffer) => {
      if (d.toString().includes("locked")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`the holder exited with ${code}: ${stderr}`)));
  });
  return child;
}

describe("lockDataDir", () => {
  it("refuses a directory another process holds, naming it, until that process dies", async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-lock-"));
    holder = await holdInAnotherProcess(dir);
    expect(() => lockDataDir(dir!)).toThrow(DataDirLockedError);
    expect(() => lockDataDir(dir!)).toThrow(`in use by process ${holder.pid}`);
    // SIGKILL runs no cleanup: the kernel drops the lock with the process.
    await killProcess(holder);
    const release = lockDataDir(dir);
    release();
  }, 30_000);

  it("refuses a second voter of this process until the first releases", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-lock-"));
    const release = lockDataDir(dir);
    expect(() => lockDataDir(dir!)).toThrow("in use by another voter in this process");
    release();
    lockDataDir(dir)();
  });

  it("is not held by a live process whose pid a dead holder left behind", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-lock-"));
    // After a reboot any process may carry the dead voter's pid; the parent of this one is alive.
    writeFileSync(join(dir, "voter.pid"), String(process.ppid));
    lockDataDir(dir)();
  });
});
