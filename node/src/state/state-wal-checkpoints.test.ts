import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KeyLoadError } from "@keyload/contract";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WAL_FRAME_BYTES } from "../fs/sqlite-limits.js";
import { StateWalCheckpoints } from "./state-wal-checkpoints.js";

let dir: string;
let db: Database.Database;
let checkpoints: StateWalCheckpoints | null = null;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "keyload-state-wal-"));
  db = new Database(join(dir, "s.db"));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("wal_autocheckpoint = 0");
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB NOT NULL)");
});
afterEach(async () => {
  await checkpoints?.close();
  checkpoints = null;
  if (db.open) db.close();
  rmSync(dir, { recursive: true, force: true });
});

const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 2));

/** One commit of `rows` 4 KiB rows, each on a page of its own, then the checkpoints' turn. */
function commit(c: StateWalCheckpoints, from: number, rows: number): void {
  const insert = db.prepare("INSERT OR REPLACE INTO t (id, v) VALUES (?, zeroblob(4000))");
  db.transaction(() => {
    for (let i = 0; i < rows; i++) insert.run((from + i) % 500);
  })();
  c.afterCommit(db);
}

/** Calls afterCommit once a tick until it throws, for up to 500 ticks; what it threw, or null. */
async function firstThrow(c: StateWalCheckpoints, on: Database.Database): Promise<unknown> {
  for (let n = 0; n < 500; n++) {
    await tick();
    try {
      c.afterCommit(on);
    } catch (error) {
      return error;
    }
  }
  return null;
}

describe("StateWalCheckpoints", () => {
  it("copies the WAL back on a worker and lets SQLite restart it, keeping it near the target", async () => {
    const c = new StateWalCheckpoints(join(dir, "s.db"), 100 * WAL_FRAME_BYTES);
    checkpoints = c;
    const walPath = join(dir, "s.db-wal");
    for (let n = 0; n < 400; n++) {
      commit(c, n * 10, 10);
      await tick();
      // A writer no faster than the worker: on a loaded machine the worker's pass may take longer than
      // a tick, and the WAL would then grow with the machine's load rather than with the cycle.
      for (let waited = 0; c.busy && waited < 1000; waited++) await tick();
    }
    expect(c.stats.cycles).toBeGreaterThanOrEqual(3);
    expect(c.stats.restarts).toBeGreaterThanOrEqual(2);
    // 4,000 pages went through the WAL; restarting it keeps it to a few cycles' worth of frames.
    expect(statSync(walPath).size).toBeLessThan(600 * 4120);
    // What the WAL held reached the database file: another connection reads every row.
    const other = new Database(join(dir, "s.db"), { readonly: true });
    try {
      expect((other.prepare("SELECT count(*) AS n FROM t").get() as { n: number }).n).toBe(500);
    } finally {
      other.close();
    }
  });

  it("starts a cycle once the WAL outgrows its target, however many commits the cycle was scaled to", async () => {
    const c = new StateWalCheckpoints(join(dir, "s.db"), 400 * WAL_FRAME_BYTES);
    checkpoints = c;
    const walPath = join(dir, "s.db-wal");
    const settle = async (): Promise<void> => {
      await tick();
      for (let waited = 0; c.busy && waited < 1000; waited++) await tick();
    };
    // An idle voter: single-row commits scale the cycle to many commits.
    for (let n = 0; n < 600; n++) {
      commit(c, n, 1);
      await settle();
    }
    const idleCycles = c.stats.cycles;
    // A flood begins: each commit now dirties 40 pages, and at the idle cycle's length the WAL would
    // hold thousands of frames before the next cycle.
    for (let n = 0; n < 60; n++) {
      commit(c, n * 40, 40);
      await settle();
    }
    expect(c.stats.cycles).toBeGreaterThan(idleCycles + 3);
    expect(statSync(walPath).size).toBeLessThan(3 * 400 * 4120);
  });

  it("leaves frames a reader held back to the worker, never to the applying thread's last pass", async () => {
    const c = new StateWalCheckpoints(join(dir, "s.db"), 100 * WAL_FRAME_BYTES);
    checkpoints = c;
    // A snapshot's copy: a read transaction that no checkpoint may pass while it lasts.
    const reader = new Database(join(dir, "s.db"), { readonly: true });
    reader.exec("BEGIN");
    reader.prepare("SELECT count(*) FROM t").get();
    const settle = async (): Promise<void> => {
      await tick();
      for (let waited = 0; c.busy && waited < 1000; waited++) await tick();
    };
    for (let n = 0; n < 100; n++) {
      commit(c, n * 10, 10);
      await settle();
    }
    expect(c.stats.deferred).toBeGreaterThan(0);
    reader.exec("COMMIT");
    reader.close();
    for (let n = 0; n < 100; n++) {
      commit(c, n * 10, 10);
      await settle();
    }
    // The 1,000 frames written under the reader went back through the worker; cycles carried on.
    expect(c.stats.finalBacklogMax).toBeLessThanOrEqual(256);
    expect(c.stats.cycles).toBeGreaterThanOrEqual(2);
  });

  it("answers a failure of its own last pass with a typed error, and keeps refusing", async () => {
    const c = new StateWalCheckpoints(join(dir, "s.db"), 100 * WAL_FRAME_BYTES);
    checkpoints = c;
    commit(c, 0, 10);
    const closed = new Database(join(dir, "other.db"));
    closed.close();
    // Once the worker's pass is back, the next call runs the last pass, here on a closed connection.
    const thrown = await firstThrow(c, closed);
    expect(thrown).toMatchObject({ reason: "StateCheckpointFailed" });
    expect(() => c.afterCommit(db)).toThrow(KeyLoadError);
  });

  it("says at once when a background checkpoint has failed, and stops the applies", async () => {
    const c = new StateWalCheckpoints(join(dir, "missing.db"), 100 * WAL_FRAME_BYTES);
    checkpoints = c;
    const told: KeyLoadError[] = [];
    c.onFailure((err) => told.push(err));
    for (let n = 0; n < 16; n++) commit(c, n, 1);
    // Without another commit: a voter with nothing to apply must stop too.
    while (c.busy) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(told).toEqual([expect.objectContaining({ reason: "StateCheckpointFailed" })]);
    const thrown = await firstThrow(c, db);
    expect(thrown).toBeInstanceOf(KeyLoadError);
    expect(thrown).toMatchObject({ reason: "StateCheckpointFailed" });
  });
});
