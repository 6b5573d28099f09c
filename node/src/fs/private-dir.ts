import { mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Logger } from "pino";
import { fsyncPath } from "./fsync.js";

/**
 * Owner only, as etcd's data directories: the state, the log and the snapshots hold every tenant's data,
 * and the API keys' hashes.
 */
export const PRIVATE_DIR_MODE = 0o700;

/**
 * Creates `dir`, and any parent missing, as PRIVATE_DIR_MODE. Returns whether it was created: one that
 * existed keeps its mode.
 */
export function makePrivateDir(dir: string): boolean {
  const first = mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (first === undefined) return false;
  // A new directory survives power loss only once the one holding it is fsynced (fsync.ts): each
  // directory made here, from the deepest, and the one holding the first.
  const top = dirname(resolve(first));
  for (let at = dirname(resolve(dir)); ; at = dirname(at)) {
    fsyncPath(at);
    if (at === top || at === dirname(at)) break;
  }
  return true;
}

/**
 * makePrivateDir, with a warning when `dir` already existed open to its group or others. As etcd does,
 * the mode is left as the operator set it, never changed behind their back.
 */
export function ensurePrivateDir(dir: string, logger: Logger): void {
  if (makePrivateDir(dir)) return;
  const mode = statSync(dir).mode & 0o777;
  if ((mode & ~PRIVATE_DIR_MODE) !== 0) {
    logger.warn(
      { dir, mode: mode.toString(8), recommended: PRIVATE_DIR_MODE.toString(8) },
      "the data directory is open to other users; restrict it to its owner",
    );
  }
}
