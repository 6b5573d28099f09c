import { describe, expect, it } from "vitest";
import { crc32c } from "../checksum/crc32c.js";
import { LogUnavailableError, RaftInvariantError, SnapshotOutOfDateError } from "../raft/errors.js";
import type { Entry, Snapshot, SnapshotChunkMessage } from "../raft/types.js";
import { LazySnapshotStorage } from "./lazy-snapshot-storage.js";

const CONF = { voters: ["a", "b", "c"] };
const LATER_CONF = { voters: ["a", "b", "c"], learners: ["d"] };

function entries(from: number, to: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let index = from; index <= to; index++)
    out.push({ index, term, type: "normal", data: new Uint8Array([index]) });
  return out;
}

/** A log holding 1..10 in term 1 and 11..20 in term 2. */
function storage(lazy: boolean): LazySnapshotStorage {
  const s = new LazySnapshotStorage(lazy);
  s.append(entries(1, 10, 1));
  s.append(entries(11, 20, 2));
  s.setHardState({ term: 2, vote: "a", commit: 20 });
  return s;
}

function bytes(...values: number[]): Uint8Array {
  return Uint8Array.from(values);
}

function chunk(snapshot: Snapshot, offset: number, length: number): SnapshotChunkMessage {
  return {
    type: "snapshot-chunk",
    from: "a",
    to: "b",
    term: 2,
    meta: snapshot.meta,
    offset,
    length,
    totalBytes: snapshot.size,
    checksum: snapshot.checksum,
    data: null,
    epoch: 0,
  };
}

describe("LazySnapshotStorage, eager", () => {
  it("makes every local snapshot with its file, as MemoryStorage does, and never answers null", () => {
    const s = storage(false);
    let serialized = 0;
    s.takeSnapshot(8, CONF, () => {
      serialized++;
      return bytes(1, 2, 3);
    });
    s.compact(6);
    expect(serialized).toBe(1);
    const snap = s.snapshot()!;
    expect(snap).toEqual({
      meta: { index: 8, term: 1, conf: CONF },
      size: 3,
      checksum: crc32c(bytes(1, 2, 3)),
    });
    expect(s.snapshotMeta()).toEqual(snap.meta);
    expect(s.onPoint).toBe(false);
    expect(s.snapshotWanted()).toBe(false);
    expect(s.unavailableAnswers).toBe(0);
    expect(s.snapshotData()).toEqual(bytes(1, 2, 3));
    expect(s.firstIndex()).toBe(7);
    expect(s.fillChunk(chunk(snap, 1, 2))?.data).toEqual(bytes(2, 3));
    expect(s.hasFile(snap.meta, snap.checksum)).toBe(true);
    expect(s.isBarePoint(8, 1)).toBe(false);
  });
});

describe("LazySnapshotStorage, lazy", () => {
  it("takes a point: durable metadata, the log compacted behind it, no file, nothing serialized", () => {
    const s = storage(true);
    s.takeSnapshot(12, CONF, () => {
      throw new Error("a point copies nothing");
    });
    s.compact(12);
    expect(s.onPoint).toBe(true);
    expect(s.snapshotMeta()).toEqual({ index: 12, term: 2, conf: CONF });
    expect(s.initialState().conf).toEqual(CONF);
    expect(s.firstIndex()).toBe(13);
    expect(s.term(12)).toBe(2);
    expect(() => s.snapshotData()).toThrow(RaftInvariantError);
    expect(s.isBarePoint(12, 2)).toBe(true);
    // Reading the metadata is the driver's, and asks for nothing.
    expect(s.snapshotWanted()).toBe(false);
  });

  it("answers the core null on a point, counting each ask, and marks a copy wanted", () => {
    const s = storage(true);
    s.takeSnapshot(12, CONF, () => bytes());
    expect(s.snapshot()).toBeNull();
    expect(s.snapshot()).toBeNull();
    expect(s.unavailableAnswers).toBe(2);
    expect(s.snapshotWanted()).toBe(true);
  });

  it("hands out the copy made at the point once it is recorded", () => {
    const s = storage(true);
    s.takeSnapshot(12, CONF, () => bytes());
    expect(s.snapshot()).toBeNull();
    const copy = s.materialize(12, CONF, bytes(7, 8, 9));
    expect(copy).toEqual({
      meta: { index: 12, term: 2, conf: CONF },
      size: 3,
      checksum: crc32c(bytes(7, 8, 9)),
    });
    expect(s.snapshot()).toEqual(copy);
    expect(s.snapshotWanted()).toBe(false);
    expect(s.onPoint).toBe(false);
    expect(s.snapshotData()).toEqual(bytes(7, 8, 9));
    expect(s.fillChunk(chunk(copy, 0, 2))?.data).toEqual(bytes(7, 8));
    expect(s.isBarePoint(12, 2)).toBe(false);
    expect(s.hasFile(copy.meta, copy.checksum)).toBe(true);
  });

  it("records a copy beyond the point, keeping the log after the point and the copy's configuration", () => {
    const s = storage(true);
    s.takeSnapshot(12, CONF, () => bytes());
    s.compact(11);
    s.snapshot();
    const copy = s.materialize(15, LATER_CONF, bytes(1, 5));
    expect(copy.meta).toEqual({ index: 15, term: 2, conf: LATER_CONF });
    expect(s.snapshotMeta()).toEqual(copy.meta);
    expect(s.initialState().conf).toEqual(LATER_CONF);
    expect(s.firstIndex()).toBe(12);
    expect(s.entries(12, 16, Number.POSITIVE_INFINITY).map((e) => e.index)).toEqual([12, 13, 14, 15]);
    // The point itself never got a file: only a copy at its index would be one.
    expect(s.isBarePoint(12, 2)).toBe(true);
  });

  it("refuses a copy while not on a point, behind the point, or beyond the log", () => {
    const s = storage(true);
    expect(() => s.materialize(5, CONF, bytes())).toThrow(RaftInvariantError);
    s.takeSnapshot(12, CONF, () => bytes());
    expect(() => s.materialize(11, CONF, bytes())).toThrow(SnapshotOutOfDateError);
    expect(() => s.materialize(21, CONF, bytes())).toThrow(LogUnavailableError);
  });

  it("lets a later point supersede a copy: its chunks find no file, and the core is answered null again", () => {
    const s = storage(true);
    s.takeSnapshot(12, CONF, () => bytes());
    s.snapshot();
    const copy = s.materialize(14, CONF, bytes(4, 4, 4, 4));
    expect(() => s.takeSnapshot(14, CONF, () => bytes())).toThrow(SnapshotOutOfDateError);
    s.takeSnapshot(17, CONF, () => bytes());
    s.compact(16);
    expect(s.snapshotMeta().index).toBe(17);
    expect(s.fillChunk(chunk(copy, 0, 2))).toBeNull();
    expect(s.snapshot()).toBeNull();
    expect(s.snapshotWanted()).toBe(true);
    // The superseded copy was a file all the same.
    expect(s.hasFile(copy.meta, copy.checksum)).toBe(true);
  });

  it("loses the wanted mark in a crash, but neither the point nor a copy", () => {
    const s = storage(true);
    s.takeSnapshot(12, CONF, () => bytes());
    s.snapshot();
    s.crash();
    expect(s.snapshotWanted()).toBe(false);
    expect(s.snapshotMeta().index).toBe(12);
    expect(s.snapshot()).toBeNull();
    expect(s.snapshotWanted()).toBe(true);
    const copy = s.materialize(13, CONF, bytes(3));
    s.crash();
    expect(s.snapshot()).toEqual(copy);
  });

  it("ends a point with a received snapshot, refusing one at or behind a copy beyond the point", () => {
    const s = storage(true);
    s.takeSnapshot(12, CONF, () => bytes());
    s.snapshot();
    s.materialize(15, CONF, bytes(1));
    const data = bytes(9, 9);
    const received = (index: number): Snapshot => ({
      meta: { index, term: 3, conf: CONF },
      size: 2,
      checksum: crc32c(data),
    });
    expect(() => s.applySnapshot(received(14), data)).toThrow(SnapshotOutOfDateError);
    expect(() => s.applySnapshot(received(15), data)).toThrow(SnapshotOutOfDateError);
    s.takeSnapshot(18, CONF, () => bytes());
    s.snapshot();
    s.applySnapshot(received(30), data);
    expect(s.onPoint).toBe(false);
    expect(s.snapshotWanted()).toBe(false);
    expect(s.snapshot()).toEqual(received(30));
    expect(s.snapshotData()).toEqual(data);
    expect(s.firstIndex()).toBe(31);
    expect(s.hasFile(received(30).meta, received(30).checksum)).toBe(true);
  });

  it("compacts behind the point but not past it", () => {
    const s = storage(true);
    s.takeSnapshot(12, CONF, () => bytes());
    s.compact(10);
    expect(s.firstIndex()).toBe(11);
    expect(() => s.compact(13)).toThrow(RaftInvariantError);
    s.compact(12);
    expect(s.firstIndex()).toBe(13);
  });
});
