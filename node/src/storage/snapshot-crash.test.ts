import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { DurableLogStore } from "./durable-log-store.js";
import type { StorageFaultPoint } from "./fault-hook.js";
import { LOG_FILE, SNAPSHOT_DIR } from "./log-recovery.js";
import { runLogStoreCrashChild } from "./test-fixtures/log-store-crash-runner.js";
import { dataFor, hs, storageFixture } from "./test-fixtures/storage-fixture.js";

const fx = storageFixture();

describe("snapshot crash safety", () => {
  const points: StorageFaultPoint[] = [
    "snapshot-temp-written",
    "snapshot-temp-synced",
    "snapshot-renamed",
    "snapshot-dir-synced",
    "log-committed",
    "log-synced",
  ];
  /** Before the commit the old snapshot must be in place; once fsynced, the new one. */
  const mustBeNew = (p: StorageFaultPoint) =>
    p === "log-synced" ? true : p === "log-committed" ? null : false;

  it.each(points)(
    "installs a leader's snapshot atomically: crash at %s",
    async (point) => {
      const dir = fx.dir();
      const run = await runLogStoreCrashChild(["install", dir, "1", point]);
      expect(run.done).toBe(false);
      const store = fx.open(dir);
      const isNew = store.snapshotIndex() === 80;
      if (mustBeNew(point) !== null) expect(isNew).toBe(mustBeNew(point));
      if (isNew) {
        expect(store.snapshot()?.meta).toEqual({ index: 80, term: 3, conf: store.initialState().conf });
        expect(snapshotBytes(store)).toEqual(dataFor(80, 3, 90_000));
        expect([store.firstIndex(), store.lastIndex()]).toEqual([81, 85]);
        expect(store.initialState().hardState).toEqual(hs(3, null, 80));
      } else {
        expect(store.snapshot()?.meta.index).toBe(40);
        expect(snapshotBytes(store)).toEqual(dataFor(40, 2, 70_000));
        expect([store.firstIndex(), store.lastIndex()]).toEqual([41, 45]);
        expect(store.initialState().hardState).toEqual(hs(2, "n2", 40));
      }
      // Leftovers of the interrupted install are gone; only the snapshot in use remains.
      expect(readdirSync(join(dir, SNAPSHOT_DIR))).toHaveLength(1);
    },
    20_000,
  );

  it.each(points)(
    "records a local snapshot atomically: crash at %s",
    async (point) => {
      const dir = fx.dir();
      const run = await runLogStoreCrashChild(["create", dir, "1", point]);
      expect(run.done).toBe(false);
      const store = fx.open(dir);
      const at = store.snapshotIndex();
      if (mustBeNew(point) !== null) expect(at).toBe(mustBeNew(point) ? 40 : 20);
      expect([20, 40]).toContain(at);
      expect(snapshotBytes(store)).toEqual(dataFor(at, 1, 60_000));
      expect([store.firstIndex(), store.lastIndex()]).toEqual([1, 50]);
      expect(readdirSync(join(dir, SNAPSHOT_DIR))).toHaveLength(1);
    },
    20_000,
  );

  it.each(points.filter((p) => p.startsWith("log-")))(
    "records a snapshot point with no file atomically: crash at %s",
    async (point) => {
      const dir = fx.dir();
      const run = await runLogStoreCrashChild(["point", dir, "1", point]);
      expect(run.done).toBe(false);
      const store = fx.open(dir);
      const at = store.snapshotIndex();
      if (mustBeNew(point) !== null) expect(at).toBe(mustBeNew(point) ? 40 : 20);
      expect([20, 40]).toContain(at);
      if (at === 40) {
        // The point stands alone: the copy it superseded is gone at the latest when the log reopens.
        expect(store.currentSnapshot()).toBeNull();
        expect(readdirSync(join(dir, SNAPSHOT_DIR))).toEqual([]);
      } else {
        expect(snapshotBytes(store)).toEqual(dataFor(20, 1, 60_000));
        expect(readdirSync(join(dir, SNAPSHOT_DIR))).toHaveLength(1);
      }
      // The compaction after the point needs no fsync: one lost in the crash leaves the whole log.
      expect(store.lastIndex()).toBe(50);
      expect(store.firstIndex()).toBe(1);
      expect(store.entries(1, 51, 1e9)).toHaveLength(50);
    },
    20_000,
  );

  it.each(["install", "create", "point"])(
    "deletes a superseded snapshot file only once the state superseding it is durable: %s",
    async (kind) => {
      const dir = fx.dir();
      // Killed with the switch committed to the log's WAL, not yet fsynced: at the next open the WAL
      // holds it, and the disk may not.
      const run = await runLogStoreCrashChild([kind, dir, "1", "log-committed"]);
      expect(run.done).toBe(false);
      const walAtClearing: number[] = [];
      const store = fx.open(dir, {
        faultHook: (point) => {
          if (point === "snapshots-clearing") {
            walAtClearing.push(statSync(join(dir, `${LOG_FILE}-wal`), { throwIfNoEntry: false })?.size ?? 0);
          }
        },
      });
      expect(walAtClearing).toEqual([0]);
      expect(readdirSync(join(dir, SNAPSHOT_DIR))).toHaveLength(store.currentSnapshot() === null ? 0 : 1);
    },
    20_000,
  );
});

function snapshotBytes(store: DurableLogStore): Uint8Array {
  return new Uint8Array(readFileSync(store.verifiedSnapshotPath()!));
}
