import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { RaftInvariantError, SnapshotOutOfDateError } from "../raft/errors.js";
import type { DurableLogStore } from "./durable-log-store.js";
import type { DurableLogWriter } from "./durable-log-writer.js";
import { LOG_FILE, SNAPSHOT_DIR } from "./log-recovery.js";
import { SnapshotPolicy } from "./snapshot-policy.js";
import type { SnapshotSource } from "./snapshot-source.js";
import { StorageFailedError } from "./storage-errors.js";
import { CONF, dataFor, entries, entry, hs, storageFixture } from "./test-fixtures/storage-fixture.js";

const fx = storageFixture();
const none = { snapshot: null, hardState: null };

/** A state machine stand-in: its "database" is the bytes of the last applied index. */
function source(index: () => number, term = 1): SnapshotSource & { copies: number; durables: number } {
  return {
    copies: 0,
    durables: 0,
    async createSnapshotFile(path) {
      this.copies++;
      const at = index();
      writeFileSync(path, dataFor(at, term, 256));
      return { index: at, term };
    },
    async durablePosition() {
      this.durables++;
      return { index: index(), term };
    },
  };
}
const confAt = () => CONF;

/** A writer whose log holds entries 1 to 30 and stands on a snapshot point at 25, with no file. */
async function onPointAt25(): Promise<DurableLogWriter<DurableLogStore>> {
  const policy = new SnapshotPolicy({ entries: 20, bytes: 1 << 30, retainEntries: 5 });
  const w = fx.openWriter(fx.dir(), {}, policy);
  await w.write({ snapshot: null, entries: entries(1, 30, 1), hardState: hs(1, "n1", 30) });
  await w.maybeSnapshot(
    source(() => 25),
    confAt,
    30,
  );
  return w;
}

describe("DurableLogWriter", () => {
  it("coalesces writes queued behind a running fsync into one transaction and one fsync", async () => {
    const later: Promise<void>[] = [];
    let w: DurableLogWriter<DurableLogStore> | null = null;
    w = fx.openWriter(fx.dir(), {
      faultHook: (point) => {
        // While the first group's fsync is pending, 50 more writes arrive.
        if (point === "log-committed" && later.length === 0) {
          for (let i = 0; i < 50; i++) later.push(w!.write({ ...none, entries: [entry(3 + i, 1)] }));
        }
      },
    });
    // Made in the same turn: they share the first transaction.
    const first = [
      w.write({ ...none, entries: [entry(1, 1)] }),
      w.write({ ...none, entries: [entry(2, 1)] }),
    ];
    await Promise.all(first);
    await Promise.all(later);
    expect(w.store.stats.commits).toBe(2);
    expect(w.store.stats.syncs).toBe(2);
    expect(w.store.lastIndex()).toBe(52);
  });

  it("records a commit index without an fsync of its own; the next fsync covers it", async () => {
    const w = fx.openWriter(fx.dir());
    await w.write({ snapshot: null, entries: entries(1, 3, 1), hardState: hs(1, "n1", 0) });
    expect(w.store.stats.syncs).toBe(1);
    await w.writeCommitIndex(hs(1, "n1", 3));
    expect(w.store.stats.syncs).toBe(1);
    expect(w.store.initialState().hardState).toEqual(hs(1, "n1", 3));
    await w.write({ ...none, entries: [entry(4, 1)] });
    expect(w.store.stats.syncs).toBe(2);
    expect(w.store.initialState().hardState).toEqual(hs(1, "n1", 3));
  });

  it("acknowledges a write only after its fsync", async () => {
    let acked = false;
    const seen: string[] = [];
    const w = fx.openWriter(fx.dir(), { faultHook: (point) => seen.push(`${point}:${acked}`) });
    await w.write({ ...none, entries: [entry(1, 1)] }).then(() => {
      acked = true;
    });
    expect(seen).toEqual(["log-committed:false", "log-fsync:false", "log-synced:false"]);
    expect(acked).toBe(true);
  });

  it("works the same with the fsync on the thread pool", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir, { fsync: "thread-pool" });
    await Promise.all([
      w.write({ ...none, entries: entries(1, 5, 1) }),
      w.write({ snapshot: null, entries: entries(6, 8, 1), hardState: hs(1, "n1", 8) }),
    ]);
    expect(w.store.stats.syncs).toBe(1);
    await w.close();
    const store = fx.open(dir);
    expect(store.entries(1, 9, 1e9)).toEqual(entries(1, 8, 1));
    expect(store.initialState().hardState).toEqual(hs(1, "n1", 8));
  });

  it("says when a group's fsync is under way on the thread pool, before the write is acknowledged", async () => {
    const seen: string[] = [];
    const w = fx.openWriter(fx.dir(), { fsync: "thread-pool", faultHook: (point) => seen.push(point) });
    await w.syncStarted();
    const written = w.write({ ...none, entries: [entry(1, 1)] }).then(() => seen.push("acknowledged"));
    await w.syncStarted().then(() => seen.push("sync started"));
    await written;
    expect(seen).toEqual(["log-committed", "log-fsync", "sync started", "log-synced", "acknowledged"]);
    // A write queued behind a running group is told once its own group's fsync is under way.
    const first = w.write({ ...none, entries: [entry(2, 1)] });
    await w.syncStarted();
    const second = w.write({ ...none, entries: [entry(3, 1)] });
    const syncsBefore = w.store.stats.syncs;
    await w.syncStarted();
    expect(w.store.stats.syncs).toBeGreaterThan(syncsBefore);
    await Promise.all([first, second]);
    expect(w.store.stats.syncs).toBe(3);
  });

  it("releases whoever waits for an fsync that a failed write never starts", async () => {
    const w = fx.openWriter(fx.dir(), {
      faultHook: (point) => {
        if (point === "log-committed") throw new StorageFailedError("injected");
      },
    });
    const written = w.write({ ...none, entries: [entry(1, 1)] });
    const queued = w.write({ ...none, entries: [entry(2, 1)] });
    await w.syncStarted();
    await expect(written).rejects.toThrow("injected");
    await expect(queued).rejects.toThrow("injected");
    await w.syncStarted();
  });

  it("keeps order within a group: a refused write does not stop the ones after it", async () => {
    const w = fx.openWriter(fx.dir());
    const results = await Promise.allSettled([
      w.write({ ...none, entries: entries(1, 3, 1) }),
      w.write({ ...none, entries: [entry(9, 1)] }),
      w.write({ ...none, entries: [entry(4, 1)] }),
      w.write({ ...none, entries: entries(3, 4, 2) }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(RaftInvariantError);
    expect(w.store.entries(1, 5, 1e9)).toEqual([entry(1, 1), entry(2, 1), entry(3, 2), entry(4, 2)]);
    expect(w.store.stats.commits).toBe(1);
  });

  it("stops for good after a failure between commit and fsync", async () => {
    let armed = true;
    const w = fx.openWriter(fx.dir(), {
      faultHook: (point) => {
        if (armed && point === "log-committed") {
          armed = false;
          throw new StorageFailedError("injected");
        }
      },
    });
    await expect(w.write({ ...none, entries: [entry(1, 1)] })).rejects.toThrow("injected");
    await expect(w.write({ ...none, entries: [entry(2, 1)] })).rejects.toThrow("injected");
  });

  it("records a snapshot point when the policy says so and compacts behind it, copying nothing", async () => {
    const policy = new SnapshotPolicy({ entries: 20, bytes: 1 << 30, retainEntries: 5 });
    const dir = fx.dir();
    const w = fx.openWriter(dir, {}, policy);
    let applied = 0;
    const state = source(() => applied);
    for (let i = 1; i <= 60; i += 10) {
      await w.write({ snapshot: null, entries: entries(i, i + 9, 1), hardState: hs(1, "n1", i + 9) });
      applied = i + 9;
      await w.maybeSnapshot(state, confAt, applied);
    }
    expect(w.store.snapshotIndex()).toBe(60);
    expect(w.store.firstIndex()).toBe(56);
    expect(state).toMatchObject({ copies: 0, durables: 3 });
    expect(w.store.currentSnapshotPath()).toBeNull();
    expect(readdirSync(join(dir, SNAPSHOT_DIR))).toEqual([]);
    expect(await w.maybeSnapshot(state, confAt, 60)).toBeNull();
    // The point and the compaction are durable: a reopened log stands on them.
    await w.close();
    const reopened = fx.openWriter(dir, {}, policy);
    expect(reopened.store.snapshotIndex()).toBe(60);
    expect(reopened.store.firstIndex()).toBe(56);
    expect(reopened.store.currentSnapshot()).toBeNull();
  });

  it("copies the state for a follower that needs the snapshot of a point, at or beyond the point", async () => {
    const w = await onPointAt25();
    expect(w.store.snapshotWanted()).toBe(false);
    // The core asks; the log has nothing to send yet and says so.
    expect(w.store.snapshot()).toBeNull();
    expect(w.store.snapshotWanted()).toBe(true);
    const meta = await w.createSnapshot(
      source(() => 25),
      confAt,
    );
    expect(meta).toEqual({ index: 25, term: 1, conf: CONF });
    expect(w.store.snapshotWanted()).toBe(false);
    expect(w.store.snapshot()).toMatchObject({ meta, size: 256 });
    expect(new Uint8Array(readFileSync(w.store.currentSnapshotPath()!))).toEqual(dataFor(25, 1, 256));
    expect(w.store.firstIndex()).toBe(21);
    // A later copy replaces it; one behind the log's snapshot is refused and its file removed.
    await w.createSnapshot(
      source(() => 28),
      confAt,
    );
    expect(w.store.snapshotIndex()).toBe(28);
    await expect(
      w.createSnapshot(
        source(() => 26),
        confAt,
      ),
    ).rejects.toThrow(SnapshotOutOfDateError);
    await waitFor(() => readdirSync(join(w.store.dir, SNAPSHOT_DIR)).length === 1);
    // At the index of a copy, neither a point nor another copy adds anything.
    expect(w.store.localSnapshotRefusal(28, 1, false)).toBeInstanceOf(SnapshotOutOfDateError);
    expect(w.store.localSnapshotRefusal(28, 1, true)).toBeInstanceOf(SnapshotOutOfDateError);
    expect(w.store.localSnapshotRefusal(29, 1, false)).toBeNull();
  });

  it("takes a snapshot received from the leader as the one wanted: a later point asks for no copy", async () => {
    const w = await onPointAt25();
    // The core, leading, asks for a snapshot on the point; then it follows, and its leader sends one.
    expect(w.store.snapshot()).toBeNull();
    expect(w.store.snapshotWanted()).toBe(true);
    const received = await w.store.snapshotFiles.store(
      { index: 40, term: 2, conf: CONF },
      dataFor(40, 2, 256),
    );
    await w.write({ snapshot: received, entries: [], hardState: hs(2, null, 40) });
    expect(w.store.snapshotWanted()).toBe(false);
    // A later point is nobody's request: no copy of the state is wanted until a core asks again.
    await w.write({ snapshot: null, entries: entries(41, 70, 2), hardState: hs(2, null, 70) });
    await w.maybeSnapshot(
      source(() => 65, 2),
      confAt,
      70,
    );
    expect(w.store.snapshotIndex()).toBe(65);
    expect(w.store.snapshotWanted()).toBe(false);
  });

  it("leaves no file behind when sealing a snapshot fails after its rename, and the next try works", async () => {
    let failing = true;
    const w = fx.openWriter(fx.dir(), {
      faultHook: (point) => {
        if (point === "snapshot-renamed" && failing) throw new StorageFailedError("injected");
      },
    });
    await w.write({ snapshot: null, entries: entries(1, 50, 1), hardState: hs(1, "n1", 50) });
    const snapshots = () => readdirSync(join(w.store.dir, SNAPSHOT_DIR));
    for (let i = 0; i < 3; i++) {
      await expect(
        w.createSnapshot(
          source(() => 40),
          confAt,
        ),
      ).rejects.toThrow(StorageFailedError);
    }
    // Each try left a full copy of the state behind until the next open.
    expect(snapshots()).toEqual([]);
    failing = false;
    await w.createSnapshot(
      source(() => 40),
      confAt,
    );
    expect(snapshots()).toHaveLength(1);
  });

  it("settles every write of a group when a refused snapshot's file fails to go", async () => {
    const w = fx.openWriter(fx.dir());
    await w.write({ snapshot: null, entries: entries(1, 50, 1), hardState: hs(1, "n1", 50) });
    w.store.snapshotFiles.remove = async () => {
      throw new Error("EIO: unlink");
    };
    // Two copies at one index in one group: the second is refused, and its file cannot be deleted.
    const results = await Promise.allSettled([
      w.createSnapshot(
        source(() => 40),
        confAt,
      ),
      w.createSnapshot(
        source(() => 40),
        confAt,
      ),
      w.write({ ...none, entries: [entry(51, 1)] }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(["fulfilled", "fulfilled", "rejected"]);
    expect(results.find((r) => r.status === "rejected")).toMatchObject({
      reason: expect.any(SnapshotOutOfDateError),
    });
    expect(w.store.lastIndex()).toBe(51);
  });

  it("snapshots by bytes too", async () => {
    const policy = new SnapshotPolicy({ entries: 1_000_000, bytes: 10_000, retainEntries: 0 });
    const w = fx.openWriter(fx.dir(), {}, policy);
    await w.write({ snapshot: null, entries: entries(1, 9, 1, 1000), hardState: hs(1, null, 9) });
    expect(
      await w.maybeSnapshot(
        source(() => 9),
        confAt,
        9,
      ),
    ).toBeNull();
    await w.write({ snapshot: null, entries: entries(10, 10, 1, 1000), hardState: hs(1, null, 10) });
    expect(
      await w.maybeSnapshot(
        source(() => 10),
        confAt,
        10,
      ),
    ).toEqual({ index: 10, term: 1, conf: CONF });
    expect(w.store.firstIndex()).toBe(11);
  });

  it("checkpoints the WAL in the background and restarts it instead of letting it grow", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir, { checkpointBytes: 256 * 1024 });
    const wal = join(dir, `${LOG_FILE}-wal`);
    let index = 0;
    const round = () =>
      Promise.all(
        Array.from({ length: 8 }, () => {
          const from = index + 1;
          index += 4;
          return w.write({ ...none, entries: entries(from, index, 1, 1024) });
        }),
      );
    // Until the worker has started and completed a couple of checkpoints.
    for (let i = 0; i < 2000 && w.store.stats.checkpoints < 2; i++) await round();
    expect(w.store.stats.checkpoints).toBeGreaterThanOrEqual(2);
    const before = statSync(wal).size;
    const firstNew = index + 1;
    for (let i = 0; i < 64; i++) await round();
    // 2 MiB more of entries: written over the restarted WAL, not appended to it.
    expect(statSync(wal).size - before).toBeLessThan(1024 * 1024);
    await w.close();
    const store = fx.open(dir);
    expect(store.lastIndex()).toBe(index);
    expect(store.entries(firstNew, index + 1, 1e12)).toEqual(entries(firstNew, index, 1, 1024));
    // Some 3 MiB of fsynced writes: seconds when the disk is shared.
  }, 30_000);

  it("checkpoints once the WAL file outgrows the checkpoint size, whatever it counted", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir, { checkpointBytes: 256 * 1024 });
    await w.write({ ...none, entries: entries(1, 4, 1, 1024) });
    const wal = join(dir, `${LOG_FILE}-wal`);
    // Frames the store did not write, so never counted: another connection's 1 MiB.
    const other = new Database(join(dir, LOG_FILE));
    try {
      other.exec("CREATE TABLE uncounted (data BLOB)");
      other.prepare("INSERT INTO uncounted VALUES (?)").run(Buffer.alloc(1024 * 1024));
    } finally {
      other.close();
    }
    expect(statSync(wal).size).toBeGreaterThan(1024 * 1024);
    const before = w.store.stats.checkpoints;
    // A single small write, far below the checkpoint size in what the store counts.
    await w.write({ ...none, entries: entries(5, 5, 1, 1024) });
    await waitFor(() => w.store.stats.checkpoints > before);
    // The cycle let SQLite restart the WAL: more writes go over it, the file does not grow.
    const grown = statSync(wal).size;
    for (let i = 6; i <= 40; i++) await w.write({ ...none, entries: entries(i, i, 1, 1024) });
    // Until the database has taken them in from the journal (every 20 ms).
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(statSync(wal).size).toBe(grown);
  });
});

async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
}
