import { InternalError } from "@keyload/contract";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { COMMIT_INTERVAL_MS } from "./apply-commits.js";
import { COMMAND_HANDLERS } from "./command-handlers.js";
import type { StateMachine } from "./state-machine.js";
import { LogBuilder, TempStates } from "./test-fixtures/state-fixtures.js";

let temp: TempStates;
let sm: StateMachine;
let log: LogBuilder;
beforeEach(() => {
  temp = new TempStates();
  sm = temp.create("s");
  log = new LogBuilder();
});
afterEach(async () => {
  vi.restoreAllMocks();
  await temp.cleanup();
});

const put = (key: string) => log.command("catalog.put", { value: key }, { params: { key } });

/** A bulk read of key `a`, its failure a rejection however it was raised. */
const read = async (state: StateMachine) => state.bulkGet("t1", ["a"]);

/** The applied index another connection reads from the file: what a crash of the voter would keep. */
function onDisk(): number {
  const db = new Database(temp.path("s.db"), { readonly: true });
  try {
    return (db.prepare("SELECT applied_index AS i FROM meta").get() as { i: number }).i;
  } finally {
    db.close();
  }
}

describe("applies commit in groups", () => {
  it("keeps batches in one open transaction until it is due, then commits them together", () => {
    let now = 1_000;
    vi.spyOn(performance, "now").mockImplementation(() => now);
    sm.applyBatch([put("a")]);
    sm.applyBatch([put("b"), put("c")]);
    expect(sm.applied().index).toBe(3);
    expect(sm.savedIndex()).toBe(0);
    expect(onDisk()).toBe(0);
    // Reads on the voter's own connection see what it applied.
    expect(sm.getDocument("t1", "c")).toMatchObject({ version: 1 });
    now += COMMIT_INTERVAL_MS - 1;
    sm.applyBatch([put("d")]);
    expect(sm.savedIndex()).toBe(0);
    now += 1;
    sm.applyBatch([put("e")]);
    expect(sm.savedIndex()).toBe(5);
    expect(onDisk()).toBe(5);
  });

  it("commits after enough entries however little time passed", () => {
    vi.spyOn(performance, "now").mockReturnValue(5);
    const entries = Array.from({ length: 4096 }, (_, i) => put(`k${i}`));
    sm.applyBatch(entries.slice(0, 4000));
    expect(onDisk()).toBe(0);
    sm.applyBatch(entries.slice(4000));
    expect(onDisk()).toBe(4096);
  });

  it("commits what is open before a snapshot copy and at close", async () => {
    vi.spyOn(performance, "now").mockReturnValue(5);
    sm.applyBatch([put("a"), put("b")]);
    expect(onDisk()).toBe(0);
    const covered = await sm.createSnapshot(temp.path("snap.db"));
    expect(covered.index).toBe(2);
    sm.applyBatch([put("c")]);
    expect(onDisk()).toBe(2);
    await sm.close();
    expect(onDisk()).toBe(3);
  });

  it("rolls back a failed batch alone, keeping the group's earlier batches", () => {
    vi.spyOn(performance, "now").mockReturnValue(5);
    sm.applyBatch([put("a")]);
    const original = COMMAND_HANDLERS["dispatch.append"];
    COMMAND_HANDLERS["dispatch.append"] = () => {
      throw new TypeError("a bug");
    };
    const failing = [
      put("b"),
      log.command("dispatch.append", { directive: "x" }, { params: { channel: "c" } }),
    ];
    try {
      expect(() => sm.applyBatch(failing)).toThrow(expect.objectContaining({ reason: "ApplyFailed" }));
    } finally {
      COMMAND_HANDLERS["dispatch.append"] = original;
    }
    expect(sm.applied().index).toBe(1);
    sm.applyBatch(failing);
    sm.applyBatch([put("d")]);
    expect(sm.getDocument("t1", "a")).toMatchObject({ version: 1 });
    expect(sm.getDocument("t1", "b")).toMatchObject({ version: 1 });
    expect(sm.applied().index).toBe(4);
  });

  it("refuses to apply on top of a group SQLite rolled back whole", () => {
    vi.spyOn(performance, "now").mockReturnValue(5);
    sm.applyBatch([put("a")]);
    const original = COMMAND_HANDLERS["catalog.put"];
    COMMAND_HANDLERS["catalog.put"] = (ctx, envelope, stores) => {
      // What SQLITE_FULL or an I/O error does to the enclosing transaction.
      (sm as unknown as { session: { db: Database.Database } }).session.db.exec("ROLLBACK");
      return original(ctx, envelope, stores);
    };
    const b = put("b");
    try {
      expect(() => sm.applyBatch([b])).toThrow(expect.objectContaining({ reason: "ApplyFailed" }));
    } finally {
      COMMAND_HANDLERS["catalog.put"] = original;
    }
    expect(() => sm.applyBatch([b])).toThrow(expect.objectContaining({ reason: "StateCommitFailed" }));
  });

  it("stops the voter when a read's commit of the open group fails, and reads nothing after it", async () => {
    vi.spyOn(performance, "now").mockReturnValue(5);
    const failures: unknown[] = [];
    sm.onFailure((err) => failures.push(err));
    sm.applyBatch([put("a")]);
    const db = (sm as unknown as { session: { db: Database.Database } }).session.db;
    const exec = db.exec.bind(db);
    vi.spyOn(db, "exec").mockImplementation((sql: string) => {
      if (sql === "COMMIT") throw Object.assign(new Error("disk I/O error"), { code: "SQLITE_IOERR" });
      return exec(sql);
    });
    // A read commits the group first (readPage): its failure loses entry 1 from the file.
    await expect(read(sm)).rejects.toMatchObject({ reason: "StateCommitFailed" });
    expect(failures).toEqual([expect.objectContaining({ reason: "StateCommitFailed" })]);
    vi.mocked(db.exec).mockRestore();
    await expect(read(sm)).rejects.toMatchObject({ reason: "StateCommitFailed" });
    expect(() => sm.applyBatch([put("b")])).toThrow(expect.objectContaining({ reason: "StateCommitFailed" }));
    expect(failures).toHaveLength(1);
  });
});

describe("the applied state's fsync", () => {
  it("stops the voter when it fails, rather than letting a snapshot point be recorded", async () => {
    const failures: unknown[] = [];
    const failing = temp.create("f", {}, (point) => {
      if (point === "state-sync") throw Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
    });
    failing.onFailure((err) => failures.push(err));
    failing.applyBatch([put("a")]);
    await expect(failing.durablePosition()).rejects.toMatchObject({ reason: "StateSyncFailed" });
    expect(failures).toEqual([expect.objectContaining({ reason: "StateSyncFailed" })]);
    await expect(read(failing)).rejects.toMatchObject({ reason: "StateSyncFailed" });
  });

  it("stops the voter when the snapshot worker's fsync of it fails, but not for a failed copy", async () => {
    const sm = temp.create("w");
    const failures: unknown[] = [];
    sm.onFailure((err) => failures.push(err));
    sm.applyBatch([put("a")]);
    // The worker's answer, without a worker whose fsync fails.
    const copier = (sm as any).snapshots as { copy: () => Promise<unknown> };
    const copy = vi.spyOn(copier, "copy");
    copy.mockRejectedValueOnce(new InternalError("the copy failed: ENOSPC", { reason: "SnapshotFailed" }));
    await expect(sm.createSnapshot(temp.path("s1"))).rejects.toMatchObject({ reason: "SnapshotFailed" });
    expect(failures).toEqual([]);
    copy.mockRejectedValueOnce(
      new InternalError("fsync of the applied state failed: EIO", { reason: "StateSyncFailed" }),
    );
    await expect(sm.createSnapshot(temp.path("s2"))).rejects.toMatchObject({ reason: "StateSyncFailed" });
    expect(failures).toEqual([expect.objectContaining({ reason: "StateSyncFailed" })]);
    await expect(read(sm)).rejects.toMatchObject({ reason: "StateSyncFailed" });
  });
});
