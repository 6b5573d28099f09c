import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_STORAGE_LIMITS } from "../fs/sqlite-limits.js";
import type { Entry, HardState } from "../raft/types.js";
import {
  ABSORB_MAX_BYTES,
  type AbsorberHost,
  absorbInto,
  JournalAbsorber,
  type PendingBatch,
} from "./journal-absorber.js";
import { LogDatabase } from "./log-database.js";
import { CONF, entries, hs, storageFixture } from "./test-fixtures/storage-fixture.js";

const fx = storageFixture();
const dbs: LogDatabase[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) db.close();
});

function openDb(): LogDatabase {
  const db = LogDatabase.open(join(fx.dir(), "log.sqlite"), CONF, DEFAULT_STORAGE_LIMITS.log);
  dbs.push(db);
  return db;
}

/** A batch of one op appending [first, last] at `term`; `truncates` as the in-memory append found it. */
function batch(seq: number, first: number, last: number, term: number, truncates = false): PendingBatch {
  return {
    seq,
    ops: [{ entries: entries(first, last, term), hardState: hs(term, "n1", 0), truncates }],
    hardState: hs(term, "n1", 0),
    bytes: 100,
  };
}

/** Every row as [index, term], and the batch states recorded on rows as [index, seq]. */
function rows(db: LogDatabase): { entries: [number, number][]; batches: [number, number][] } {
  const out: { entries: [number, number][]; batches: [number, number][] } = { entries: [], batches: [] };
  for (const { entry, batch } of db.scanAfter(0)) {
    out.entries.push([entry.index, entry.term]);
    if (batch !== null) out.batches.push([entry.index, batch.seq]);
  }
  return out;
}

const pairs = (from: number, to: number, term: number): [number, number][] =>
  entries(from, to, term).map((e: Entry) => [e.index, e.term]);

/** A host whose flags a test sets, recording the absorbs and failures it is told of. */
function host(db: LogDatabase) {
  const seen = { isStopped: false, isGated: false, failed: [] as unknown[], calls: [] as number[][] };
  const host: AbsorberHost = {
    state: () => db.readState(),
    absorbed: (batches) => {
      seen.calls.push(batches.map((b) => b.seq));
    },
    fail: (err) => {
      seen.failed.push(err);
      return new Error("stopped");
    },
    stopped: () => seen.isStopped,
    gated: () => seen.isGated,
  };
  return Object.assign(seen, { host });
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("absorbInto", () => {
  it("applies the batches in order, a later one replacing what an earlier one appended", () => {
    const db = openDb();
    absorbInto(db, db.readState(), [batch(1, 1, 5, 1), batch(2, 4, 6, 2, true), batch(3, 7, 7, 2)]);
    // The batch state rides on the newest row only; the state row is left alone.
    expect(rows(db)).toEqual({ entries: [...pairs(1, 3, 1), ...pairs(4, 7, 2)], batches: [[7, 3]] });
    expect(db.readState().seq).toBe(0);
  });

  it("writes the state row when the batches append nothing", () => {
    const db = openDb();
    const hardState: HardState = hs(4, "n2", 0);
    absorbInto(db, db.readState(), [
      { seq: 9, ops: [{ entries: [], hardState, truncates: false }], hardState, bytes: 1 },
    ]);
    expect(db.readState()).toMatchObject({ seq: 9, hardState });
    expect(rows(db).entries).toEqual([]);
  });

  it("writes nothing when the transaction fails part way", () => {
    const db = openDb();
    absorbInto(db, db.readState(), [batch(1, 1, 2, 1)]);
    // Index 2 again without truncating: the insert fails, and the whole absorb with it.
    expect(() => absorbInto(db, db.readState(), [batch(2, 3, 3, 1), batch(3, 2, 2, 1)])).toThrow();
    expect(rows(db)).toEqual({ entries: pairs(1, 2, 1), batches: [[2, 1]] });
  });
});

describe("JournalAbsorber", () => {
  it("takes every pending batch in at once when asked, oldest first", () => {
    const db = openDb();
    const h = host(db);
    const a = new JournalAbsorber(db, 1e9, h.host);
    a.add(batch(1, 1, 3, 1));
    a.add(batch(2, 3, 4, 2, true));
    expect(a.pendingBatches).toBe(2);
    a.absorb();
    expect(a.pendingBatches).toBe(0);
    expect(h.calls).toEqual([[1, 2]]);
    expect(rows(db)).toEqual({ entries: [...pairs(1, 2, 1), ...pairs(3, 4, 2)], batches: [[4, 2]] });
    a.absorb();
    expect(h.calls).toHaveLength(1);
  });

  it("takes batches up to the entry limit, and the rest in the next turn", async () => {
    const db = openDb();
    const h = host(db);
    const a = new JournalAbsorber(db, 1e9, h.host);
    for (let seq = 1; seq <= 4; seq++) a.add(batch(seq, seq * 2 - 1, seq * 2, 1));
    a.absorb(3);
    expect(h.calls).toEqual([[1, 2]]);
    expect(rows(db).entries).toEqual(pairs(1, 4, 1));
    await nextTurn();
    expect(h.calls).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(rows(db)).toEqual({
      entries: pairs(1, 8, 1),
      batches: [
        [4, 2],
        [8, 4],
      ],
    });
  });

  it("absorbs on the timer, and at once past the byte limit", async () => {
    const db = openDb();
    const h = host(db);
    const a = new JournalAbsorber(db, 10, h.host);
    a.add(batch(1, 1, 1, 1));
    a.absorbSoon();
    expect(h.calls).toEqual([]);
    await vi.waitFor(() => expect(h.calls).toEqual([[1]]));
    a.add({ ...batch(2, 2, 2, 1), bytes: ABSORB_MAX_BYTES });
    a.absorbSoon();
    expect(h.calls).toEqual([[1], [2]]);
  });

  it("waits while a checkpoint holds commits, and does nothing once the store stopped", () => {
    const db = openDb();
    const h = host(db);
    const a = new JournalAbsorber(db, 5, h.host);
    // Fake timers: "nothing happened" must mean the timer ran, not that it had no turn yet.
    vi.useFakeTimers();
    try {
      h.isGated = true;
      a.add(batch(1, 1, 1, 1));
      a.absorbSoon();
      vi.advanceTimersByTime(100);
      expect(h.calls).toEqual([]);
      h.isGated = false;
      vi.advanceTimersByTime(5);
      expect(h.calls).toEqual([[1]]);
      h.isStopped = true;
      a.add(batch(2, 2, 2, 1));
      a.absorbSoon();
      vi.advanceTimersByTime(100);
      expect(h.calls).toEqual([[1]]);
      expect(a.pendingBatches).toBe(1);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("stops the store when the database refuses the batches, and throws what the host returns", () => {
    const db = openDb();
    const h = host(db);
    const a = new JournalAbsorber(db, 1e9, h.host);
    a.add(batch(1, 1, 1, 1));
    a.absorb();
    a.add(batch(2, 1, 1, 1));
    expect(() => a.absorb()).toThrow("stopped");
    expect(h.failed).toHaveLength(1);
    expect(h.calls).toEqual([[1]]);
  });
});
