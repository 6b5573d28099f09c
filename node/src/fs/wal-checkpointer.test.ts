import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WalCheckpointError, WalCheckpointer } from "./wal-checkpointer.js";

let dir: string;
let path: string;
let db: Database.Database;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "keyload-wal-checkpointer-"));
  path = join(dir, "d.db");
  db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("wal_autocheckpoint = 0");
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB NOT NULL)");
  const insert = db.prepare("INSERT INTO t (v) VALUES (zeroblob(4000))");
  for (let i = 0; i < 200; i++) insert.run();
});
afterEach(() => {
  if (db.open) db.close();
  rmSync(dir, { recursive: true, force: true });
});

function removeDatabase(): void {
  db.close();
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
}

describe("WalCheckpointer", () => {
  it("copies every committed frame into the database file from its worker", async () => {
    const c = new WalCheckpointer(path);
    try {
      const r = await c.checkpoint();
      expect(r.log).toBeGreaterThanOrEqual(200);
      expect(r.checkpointed).toBe(r.log);
    } finally {
      await c.close();
    }
  });

  it("waitIdle returns only once a running checkpoint has let go of the file", async () => {
    const c = new WalCheckpointer(path);
    try {
      const result = c.checkpoint();
      c.waitIdle();
      // Had waitIdle not waited, the worker (still starting) would open a file no longer there.
      removeDatabase();
      await expect(result).resolves.toMatchObject({ checkpointed: expect.any(Number) });
    } finally {
      await c.close();
    }
  });

  it("fails the checkpoint, and every later one, when the database cannot be opened", async () => {
    removeDatabase();
    const c = new WalCheckpointer(path);
    try {
      await expect(c.checkpoint()).rejects.toMatchObject({ code: "WalCheckpointFailed" });
      await expect(c.checkpoint()).rejects.toBeInstanceOf(WalCheckpointError);
    } finally {
      await c.close();
    }
    await expect(c.checkpoint()).rejects.toMatchObject({ code: "WalCheckpointerClosed" });
  });
});
