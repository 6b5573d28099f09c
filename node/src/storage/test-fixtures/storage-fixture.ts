import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import type { Entry, HardState } from "../../raft/types.js";
import type { DurableLogStoreOptions } from "../durable-log-options.js";
import { DurableLogStore } from "../durable-log-store.js";
import { DurableLogWriter } from "../durable-log-writer.js";
import type { SnapshotPolicy } from "../snapshot-policy.js";

export const CONF = { voters: ["n1", "n2", "n3"] };

/**
 * Temporary data directories and the stores opened on them, all closed and removed after each test
 * whether it passed or not.
 */
export function storageFixture() {
  const dirs: string[] = [];
  const stores: DurableLogStore[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close().catch(() => undefined);
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return {
    dir(): string {
      const d = mkdtempSync(join(tmpdir(), "keyload-storage-"));
      dirs.push(d);
      return d;
    },
    /** Opens a store with small journal files: the many opens stay cheap, and writes switch files often. */
    open(dir: string, options: Partial<DurableLogStoreOptions> = {}): DurableLogStore {
      const store = DurableLogStore.open(dir, { conf: CONF, journalBytes: 64 * 1024, ...options });
      stores.push(store);
      return store;
    },
    openWriter(
      dir: string,
      options: Partial<DurableLogStoreOptions> = {},
      policy?: SnapshotPolicy,
    ): DurableLogWriter<DurableLogStore> {
      return new DurableLogWriter(this.open(dir, options), policy);
    },
  };
}

/** Deterministic entry data derived from its position, so a reader can check it without a copy. */
export function dataFor(index: number, term: number, size: number): Uint8Array {
  const d = new Uint8Array(size);
  let x = (index * 2654435761 + term * 40503) >>> 0;
  for (let i = 0; i < size; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    d[i] = x >>> 24;
  }
  return d;
}

export function entry(index: number, term: number, size = 16): Entry {
  return { index, term, type: "normal", data: dataFor(index, term, size) };
}

export function entries(from: number, to: number, term: number, size = 16): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push(entry(i, term, size));
  return out;
}

export function hs(term: number, vote: string | null, commit: number): HardState {
  return { term, vote, commit };
}
