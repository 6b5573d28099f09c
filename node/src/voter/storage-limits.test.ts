import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Database from "better-sqlite3";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { loadVoterConfig } from "../config/voter-config.js";
import type { SqliteLimits } from "../fs/sqlite-limits.js";
import { pickFreePorts } from "../net/free-ports.js";
import { SearchIndexStore } from "../state/search-index-store.js";
import { singleVoterEnv } from "./test-fixtures/cluster-envs.js";
import { driverParts } from "./test-fixtures/cluster-per-test.js";
import { type RunningVoter, startVoter } from "./voter.js";

const MiB = 1024 * 1024;

let root: string | undefined;
let voter: RunningVoter | undefined;
let index: SearchIndexStore | undefined;
afterEach(async () => {
  index?.close();
  index = undefined;
  await voter?.shutdown();
  voter = undefined;
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** What the connection's pragmas say, in the configuration's units. */
function pragmas(db: Database.Database): SqliteLimits & { autocheckpoint: number } {
  const read = (name: string) => db.pragma(name, { simple: true }) as number;
  return {
    cacheBytes: -read("cache_size") * 1024,
    mmapBytes: read("mmap_size"),
    walLimitBytes: read("journal_size_limit"),
    autocheckpoint: read("wal_autocheckpoint"),
  };
}

describe("the databases' native limits", () => {
  it("are set from the Storage section on each database the voter opens, and checkpoints keep within them", async () => {
    root = mkdtempSync(join(tmpdir(), "keyload-storage-limits-"));
    const [httpPort, peerPort] = (await pickFreePorts("127.0.0.1", 2)) as [number, number];
    const config = loadVoterConfig({
      env: singleVoterEnv(join(root, "voter1"), httpPort, peerPort, {
        KeyLoad__Storage__LogCacheBytes: String(3 * MiB),
        KeyLoad__Storage__LogMmapBytes: String(MiB),
        KeyLoad__Storage__LogWalLimitBytes: String(6 * MiB),
        KeyLoad__Storage__StateCacheBytes: String(5 * MiB),
        KeyLoad__Storage__StateMmapBytes: String(2 * MiB),
        KeyLoad__Storage__StateWalLimitBytes: String(10 * MiB),
        KeyLoad__Storage__SearchCacheBytes: String(7 * MiB),
        KeyLoad__Storage__SearchMmapBytes: String(3 * MiB),
        KeyLoad__Storage__SearchWalLimitBytes: String(20 * MiB),
      }),
    });
    voter = await startVoter(config, pino({ level: "silent" }));
    const { store, stateMachine } = driverParts(voter.driver);

    const log = store as unknown as {
      readonly db: { readonly db: Database.Database };
      readonly options: { readonly checkpointBytes: number };
    };
    expect(pragmas(log.db.db)).toEqual({
      cacheBytes: 3 * MiB,
      mmapBytes: MiB,
      walLimitBytes: 6 * MiB,
      // The store checkpoints on its own worker, by half the WAL's limit.
      autocheckpoint: 0,
    });
    expect(log.options.checkpointBytes).toBe(3 * MiB);

    const state = stateMachine as unknown as {
      readonly session: { readonly db: Database.Database };
      readonly checkpoints: { readonly targetBytes: number };
    };
    expect(pragmas(state.session.db)).toEqual({
      cacheBytes: 5 * MiB,
      mmapBytes: 2 * MiB,
      walLimitBytes: 10 * MiB,
      autocheckpoint: 0,
    });
    // Half of 10 MiB, in bytes of the database's own frames.
    expect(state.checkpoints.targetBytes).toBe(5 * MiB);

    // The search worker opens its index the same way, with the limits it is handed.
    index = SearchIndexStore.open(join(root, "index.search"), config.storage.search);
    expect(pragmas((index as unknown as { readonly db: Database.Database }).db)).toEqual({
      cacheBytes: 7 * MiB,
      mmapBytes: 3 * MiB,
      walLimitBytes: 20 * MiB,
      autocheckpoint: Math.floor((10 * MiB) / 4120),
    });
  });

  it("default to bounded values", () => {
    const config = loadVoterConfig({
      env: singleVoterEnv("/tmp/unused", 7101, 7201),
    });
    expect(config.storage).toEqual({
      log: { cacheBytes: 16 * MiB, mmapBytes: 0, walLimitBytes: 16 * MiB },
      state: { cacheBytes: 64 * MiB, mmapBytes: 0, walLimitBytes: 16 * MiB },
      search: { cacheBytes: 16 * MiB, mmapBytes: 0, walLimitBytes: 64 * MiB },
    });
  });
});
