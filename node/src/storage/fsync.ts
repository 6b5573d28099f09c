import { closeSync, fsyncSync, openSync } from "node:fs";
import { open } from "node:fs/promises";

/**
 * Makes a directory's entries durable: a created, renamed or deleted file survives power loss only
 * once its directory has been fsynced too.
 */
export function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
