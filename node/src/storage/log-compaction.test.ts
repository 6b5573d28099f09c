import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_STORAGE_LIMITS } from "../fs/sqlite-limits.js";
import { type CompactionHost, LogCompaction } from "./log-compaction.js";
import { LogDatabase } from "./log-database.js";
import { LogIndex } from "./log-index.js";
import { CONF, entries, storageFixture } from "./test-fixtures/storage-fixture.js";

const fx = storageFixture();
const dbs: LogDatabase[] = [];
const compactions: LogCompaction[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const c of compactions.splice(0)) c.stop();
  for (const db of dbs.splice(0)) db.close();
});

/** A database holding rows 1..last, and an index compacted to `compactedTo`. */
function log(last: number, compactedTo: number): { db: LogDatabase; index: LogIndex } {
  const db = LogDatabase.open(join(fx.dir(), "log.sqlite"), CONF, DEFAULT_STORAGE_LIMITS.log);
  dbs.push(db);
  const index = new LogIndex(0, 0);
  db.transaction(() => {
    for (const e of entries(1, last, 1)) {
      db.insert(e);
      index.append(e);
    }
  });
  index.compactTo(compactedTo);
  return { db, index };
}

const stored = (db: LogDatabase): number[] => db.readRange(0, 1e9, () => true).map((e) => e.index);

function start(db: LogDatabase, index: LogIndex, stepEntries: number, next: number | null) {
  const seen = { isHeld: false, steps: 0, failed: [] as unknown[] };
  const host: CompactionHost = {
    held: () => seen.isHeld,
    deleted: () => {
      seen.steps++;
    },
    fail: (err) => {
      seen.failed.push(err);
    },
  };
  const h = Object.assign(seen, { host });
  const c = new LogCompaction(db, index, stepEntries, 0, next, h.host);
  compactions.push(c);
  return { c, h };
}

describe("LogCompaction", () => {
  // Fake timers: "nothing was deleted" must mean the step ran, not that it had no turn yet.
  it("deletes the rows up to the compaction point in steps, and then stops", () => {
    const { db, index } = log(20, 12);
    const { c, h } = start(db, index, 5, 1);
    vi.useFakeTimers();
    c.schedule();
    vi.runAllTimers();
    expect(stored(db)).toEqual(entries(13, 20, 1).map((e) => e.index));
    // [1, 6), [6, 11), [11, 13).
    expect(h.steps).toBe(3);
    expect(h.failed).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("starts from the lowest row marked, and does nothing while nothing is marked", () => {
    const { db, index } = log(10, 8);
    const { c, h } = start(db, index, 100, null);
    vi.useFakeTimers();
    c.schedule();
    vi.runAllTimers();
    expect(h.steps).toBe(0);
    c.markFrom(3);
    c.markFrom(5);
    c.schedule();
    vi.runAllTimers();
    expect(stored(db)).toEqual([1, 2, 9, 10]);
  });

  it("deletes nothing while the host holds deletions, even once a step is due, nor after stop", () => {
    const { db, index } = log(10, 8);
    const { c, h } = start(db, index, 100, 1);
    vi.useFakeTimers();
    h.isHeld = true;
    c.schedule();
    vi.runAllTimers();
    expect(stored(db)).toHaveLength(10);
    // Held by the time the scheduled step comes due.
    h.isHeld = false;
    c.schedule();
    h.isHeld = true;
    vi.runAllTimers();
    expect(stored(db)).toHaveLength(10);
    h.isHeld = false;
    c.schedule();
    c.stop();
    vi.runAllTimers();
    expect(stored(db)).toHaveLength(10);
    c.schedule();
    vi.runAllTimers();
    expect(stored(db)).toEqual([9, 10]);
  });

  it("arms no timer while held or while nothing waits, and one at most", () => {
    const { db, index } = log(10, 8);
    const { c, h } = start(db, index, 2, null);
    vi.useFakeTimers();
    try {
      c.schedule();
      expect(vi.getTimerCount()).toBe(0);
      c.markFrom(1);
      h.isHeld = true;
      c.schedule();
      expect(vi.getTimerCount()).toBe(0);
      h.isHeld = false;
      c.schedule();
      c.schedule();
      expect(vi.getTimerCount()).toBe(1);
      c.stop();
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("stops the store when a step fails, and schedules no more", () => {
    const { db, index } = log(10, 8);
    const { c, h } = start(db, index, 2, 1);
    db.close();
    vi.useFakeTimers();
    c.schedule();
    vi.runAllTimers();
    expect(h.failed).toHaveLength(1);
    expect(h.steps).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
