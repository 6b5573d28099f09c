import { stat } from "node:fs/promises";

/**
 * The compaction reserve: the disk one more snapshot of the current state takes. A snapshot is a copy
 * of the state database, the pages its WAL holds included (the search index is rebuilt from the
 * documents, never copied), so the database file and its WAL bound it. A follower installing a
 * leader's snapshot holds the received file and its copy beside the database at once: up to twice
 * this, the rest of which the floor's margin is for.
 */
export async function snapshotReserveBytes(statePath: string): Promise<number> {
  const sizes = await Promise.all([statePath, `${statePath}-wal`].map(fileBytes));
  return sizes[0]! + sizes[1]!;
}

async function fileBytes(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw err;
  }
}
