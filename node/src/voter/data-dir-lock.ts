import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";

/** Another live process holds the data directory: two voters on one log would corrupt it. */
export class DataDirLockedError extends Error {
  readonly code = "KeyLoadDataDirLocked";
  constructor(dir: string, pid: number) {
    super(`the data directory ${dir} is in use by process ${pid}; stop it first`);
    this.name = new.target.name;
  }
}

const LOCK_FILE = "voter.lock";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Claims `dir` for this process with a lock file holding its pid. A lock left by a process that no
 * longer exists (killed with SIGKILL) is taken over; one held by a live process refuses the start.
 * Returns the release function.
 */
export function lockDataDir(dir: string): () => void {
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const holder = Number.parseInt(readFileSync(path, "utf8"), 10);
      if (Number.isSafeInteger(holder) && holder !== process.pid && alive(holder)) {
        throw new DataDirLockedError(dir, holder);
      }
      rmSync(path, { force: true });
    }
  }
  throw new DataDirLockedError(dir, -1);
}
