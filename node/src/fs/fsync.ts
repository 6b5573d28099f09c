import { closeSync, fsyncSync, openSync } from "node:fs";
import { open } from "node:fs/promises";

/**
 * Flushes a file, or a directory's entries, to the disk. A created, renamed or deleted file survives
 * power loss only once its directory has been fsynced too.
 */
export function fsyncPath(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** fsyncPath off the event loop, on the thread pool. */
export async function fsyncPathAsync(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Where an fsync runs: on the event loop, which it holds until the data is on stable storage, or on
 * the libuv thread pool, which frees the event loop meanwhile at the cost of two thread hand-offs.
 */
export type FsyncSite = "event-loop" | "thread-pool";
