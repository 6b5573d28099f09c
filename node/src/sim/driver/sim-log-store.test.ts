import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { crc32c } from "../../checksum/crc32c.js";
import type { Entry, HardState, SnapshotMeta } from "../../raft/types.js";
import { DurableLogWriter, type LogWrite } from "../../storage/durable-log-writer.js";
import type { LogStore } from "../../storage/log-store.js";
import { SnapshotPolicy } from "../../storage/snapshot-policy.js";
import type { SnapshotSource } from "../../storage/snapshot-source.js";
import { StorageFailedError } from "../../storage/storage-errors.js";
import { CONF, dataFor, storageFixture } from "../../storage/test-fixtures/storage-fixture.js";
import { SimFileMissingError, SimLogDisk } from "./sim-log-disk.js";
import { SimLogStore, type SimLogStoreOptions } from "./sim-log-store.js";

const fx = storageFixture();

/** Every sync completes in the next turn: the equivalence test needs no simulated clock. */
const NEXT_TURN: SimLogStoreOptions = { schedule: (_delay, cb) => setImmediate(cb), syncDelay: () => 0 };

/** Snapshot every applied entry, keeping `retain` behind it: `maybeSnapshot` is then always due. */
const policy = (retain: number) => new SnapshotPolicy({ entries: 1, bytes: 1 << 30, retainEntries: retain });

type Cmd =
  | {
      t: "append";
      back: number;
      count: number;
      bump: boolean;
      size: number;
      hard: boolean;
      vote: boolean;
      commit: number;
    }
  | { t: "gap" }
  | { t: "vote-change" }
  | { t: "group"; a: Cmd & { t: "append" }; b: Cmd & { t: "append" } }
  | { t: "commit-index"; commit: number }
  | {
      t: "install";
      ahead: number;
      tail: number;
      size: number;
      bump: boolean;
      chunks: number;
      fault: "none" | "checksum" | "short" | "order";
    }
  | { t: "stale-install" }
  | { t: "create"; pick: number; size: number; badTerm: boolean }
  | { t: "point"; pick: number; retain: number; badTerm: boolean }
  | { t: "compact"; pick: number }
  | { t: "reopen"; crash: boolean };

const appendArb = fc.record({
  t: fc.constant("append" as const),
  back: fc.nat(6),
  count: fc.integer({ min: 1, max: 8 }),
  bump: fc.boolean(),
  size: fc.nat(120),
  hard: fc.boolean(),
  vote: fc.boolean(),
  commit: fc.nat(4),
});

const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 8, arbitrary: appendArb },
  { weight: 1, arbitrary: fc.constant({ t: "gap" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "vote-change" as const }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("group" as const), a: appendArb, b: appendArb }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("commit-index" as const), commit: fc.nat(4) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant("install" as const),
      ahead: fc.integer({ min: 1, max: 12 }),
      tail: fc.nat(3),
      size: fc.nat(3000),
      bump: fc.boolean(),
      chunks: fc.integer({ min: 1, max: 4 }),
      fault: fc.constantFrom("none" as const, "none" as const, "none" as const, "checksum", "short", "order"),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ t: "stale-install" as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant("create" as const),
      pick: fc.nat(40),
      size: fc.nat(500),
      badTerm: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant("point" as const),
      pick: fc.nat(40),
      retain: fc.nat(4),
      badTerm: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("compact" as const), pick: fc.nat(40) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("reopen" as const), crash: fc.boolean() }) },
);

/** One side of the comparison: a writer over its store, and how to reach its files. */
interface Side {
  writer: DurableLogWriter<LogStore>;
  /** The bytes of a file the store names by path. */
  read(path: string): Uint8Array;
  /** Writes a temporary file, as a state machine's copy does. */
  writeTemp(path: string, data: Uint8Array): void;
}

function ents(from: number, count: number, term: number, size: number): Entry[] {
  return Array.from({ length: count }, (_, i) => ({
    index: from + i,
    term,
    type: i % 5 === 4 ? ("noop" as const) : ("normal" as const),
    data: dataFor(from + i, term, size),
  }));
}

/** The log a command is interpreted against: the real store's, read without side effects. */
interface LogView {
  last: number;
  first: number;
  hs: HardState;
  snap: number;
  term(i: number): number;
}

/** Read before either side runs the command: both must be given the same writes. */
function view(s: LogStore): LogView {
  const first = s.firstIndex();
  const last = s.lastIndex();
  const terms = new Map<number, number>();
  for (let i = first - 1; i <= last; i++) terms.set(i, s.term(i));
  return {
    last,
    first,
    hs: s.initialState().hardState,
    snap: s.snapshotIndex(),
    term: (i) => {
      const t = terms.get(i);
      if (t === undefined) throw new Error(`no term at ${i} in the view`);
      return t;
    },
  };
}

function appendWrite(cmd: Cmd & { t: "append" }, v: LogView): LogWrite {
  const { hs, last } = v;
  const floor = Math.max(hs.commit, v.snap);
  const start = Math.max(last + 1 - cmd.back, floor + 1);
  const term = Math.max(v.term(start - 1), hs.term, 1) + (cmd.bump ? 1 : 0);
  const newLast = start + cmd.count - 1;
  let hardState: HardState | null = null;
  if (cmd.hard || term > hs.term) {
    const t = Math.max(hs.term, term);
    const vote = t === hs.term ? (hs.vote ?? (cmd.vote ? "n2" : null)) : cmd.vote ? "n1" : null;
    hardState = { term: t, vote, commit: hs.commit + Math.floor((cmd.commit * (newLast - hs.commit)) / 4) };
  }
  return { snapshot: null, entries: ents(start, cmd.count, term, cmd.size), hardState };
}

/** An error reduced to what a caller can match on; a value as it is. */
async function outcome(fn: () => unknown): Promise<unknown> {
  try {
    return { ok: normalize(await fn()) };
  } catch (err) {
    return { error: (err as Error).constructor.name, message: (err as Error).message };
  }
}

/** Entry data as hex: the real store's reads come back as Buffers. */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value instanceof Uint8Array) return Buffer.from(value).toString("hex");
  return value;
}

/** A received snapshot, written chunk by chunk, with a fault when asked; returns the sealed file or the error. */
async function receive(
  s: LogStore,
  meta: SnapshotMeta,
  data: Uint8Array,
  chunks: number,
  fault: Cmd & { t: "install" },
) {
  const w = s.snapshotFiles.receive(meta, data.byteLength);
  const step = Math.max(1, Math.ceil(data.byteLength / chunks));
  const log: unknown[] = [];
  let end = data.byteLength;
  if (fault.fault === "short") end = Math.max(0, end - 1);
  for (let at = 0; at < end; at += step) {
    const chunk = data.subarray(at, Math.min(end, at + step));
    if (fault.fault === "order" && at > 0) log.push(await outcome(() => w.write(at + 1, chunk)));
    log.push(await outcome(() => w.write(at, chunk)));
    log.push(w.receivedBytes, w.checksum);
  }
  const expected = fault.fault === "checksum" ? (crc32c(data) ^ 1) >>> 0 : crc32c(data);
  try {
    return { log, file: await w.finish(expected) };
  } catch (err) {
    log.push({ error: (err as Error).constructor.name, message: (err as Error).message });
    return { log, file: null };
  }
}

/** Runs `cmd` on one side; returns everything it observed (results, refusals). */
async function run(cmd: Exclude<Cmd, { t: "reopen" }>, v: LogView, side: Side): Promise<unknown> {
  const w = side.writer;
  switch (cmd.t) {
    case "append":
      return outcome(() => w.write(appendWrite(cmd, v)));
    case "gap":
      return outcome(() =>
        w.write({ snapshot: null, entries: ents(v.last + 2, 1, Math.max(v.hs.term, 1), 4), hardState: null }),
      );
    case "vote-change": {
      const hs = v.hs;
      return outcome(() => w.write({ snapshot: null, entries: [], hardState: { ...hs, vote: "n3" } }));
    }
    case "group": {
      // Issued in one turn, so both writers commit them in one group.
      const writes = [appendWrite(cmd.a, v), appendWrite(cmd.b, v)];
      const settled = await Promise.allSettled(writes.map((x) => w.write(x)));
      return settled.map((r) =>
        r.status === "fulfilled"
          ? "ok"
          : { error: (r.reason as Error).constructor.name, message: (r.reason as Error).message },
      );
    }
    case "commit-index": {
      const hs = v.hs;
      const commit = hs.commit + Math.floor((cmd.commit * (v.last - hs.commit)) / 4);
      return outcome(() => w.writeCommitIndex({ ...hs, commit }));
    }
    case "install":
    case "stale-install": {
      const floor = Math.max(v.hs.commit, v.snap);
      const install: Cmd & { t: "install" } =
        cmd.t === "install"
          ? cmd
          : { t: "install", ahead: 0, tail: 0, size: 3, bump: false, chunks: 1, fault: "none" };
      const index = cmd.t === "install" ? floor + cmd.ahead : Math.max(v.snap, 1);
      const term = Math.max(v.hs.term, 1) + (install.bump ? 1 : 0);
      const meta = { index, term, conf: CONF };
      const data = dataFor(index, term, install.size);
      const got = await receive(w.store, meta, data, install.chunks, install);
      if (got.file === null) return got.log;
      const file = got.file;
      const hardState = { term, vote: term === v.hs.term ? v.hs.vote : null, commit: index };
      const written = await outcome(() =>
        w.write({ snapshot: file, entries: ents(index + 1, install.tail, term, 10), hardState }),
      );
      return [got.log, { meta: file.meta, size: file.size, checksum: file.checksum }, written];
    }
    case "create": {
      const span = v.last - v.snap + 2;
      const index = v.snap + (cmd.pick % span);
      const known = index <= v.last && index >= v.first - 1;
      const term = known && !cmd.badTerm ? v.term(index) : 1;
      const data = dataFor(index, 99, cmd.size);
      const source: SnapshotSource = {
        async createSnapshotFile(path) {
          side.writeTemp(path, data);
          return { index, term };
        },
        durablePosition: async () => ({ index, term }),
      };
      return outcome(() => w.createSnapshot(source, () => CONF));
    }
    case "point": {
      const span = v.last - v.snap + 2;
      const index = v.snap + (cmd.pick % span);
      const known = index <= v.last && index >= v.first - 1;
      const term = known && !cmd.badTerm ? v.term(index) : 1;
      const source: SnapshotSource = {
        createSnapshotFile: () => Promise.reject(new Error("a point copies nothing")),
        durablePosition: async () => ({ index, term }),
      };
      const pointWriter = new DurableLogWriter(w.store, policy(cmd.retain));
      return outcome(() => pointWriter.maybeSnapshot(source, () => CONF, index));
    }
    case "compact": {
      const offset = v.first - 1;
      const index = offset - 1 + (cmd.pick % (v.snap - offset + 3));
      return outcome(() => w.store.compact(index));
    }
  }
}

/** Everything a user of LogStore can observe, with errors reduced to their class and message. */
async function observe(side: Side): Promise<unknown[]> {
  const s = side.writer.store;
  const first = s.firstIndex();
  const last = s.lastIndex();
  const snap = s.snapshotIndex();
  const seen: unknown[] = [s.initialState(), first, last, snap, s.snapshotWanted()];
  seen.push(await outcome(() => s.snapshot()), s.snapshotWanted());
  const current = s.currentSnapshot();
  seen.push(current === null ? null : { meta: current.meta, size: current.size, checksum: current.checksum });
  seen.push(s.currentSnapshotPath() !== null);
  seen.push(
    await outcome(() => {
      const path = s.verifiedSnapshotPath();
      return path === null ? null : side.read(path);
    }),
  );
  if (current !== null) {
    const reader = await s.snapshotFiles.openReader(current);
    const parts: unknown[] = [];
    for (let at = 0; at <= current.size; at += 700)
      parts.push(await outcome(() => reader.readChunk(at, 700)));
    parts.push(await outcome(() => reader.readChunk(current.size + 1, 1)));
    await reader.close();
    seen.push(parts);
  }
  for (let i = first - 2; i <= last + 1; i++) seen.push(await outcome(() => s.term(i)));
  const los = [first - 1, first, Math.floor((first + last) / 2), last, last + 1];
  for (const lo of los) {
    for (const hi of [lo, lo + 1, last + 1, last + 2]) {
      for (const max of [0, 100, 1e9]) seen.push(await outcome(() => s.entries(lo, hi, max)));
      seen.push(await outcome(() => s.byteSize(lo, hi)));
    }
  }
  seen.push(await outcome(() => s.entries(first + 0.5, last, 10)));
  seen.push(await outcome(() => s.entries(first, last, Number.NaN)));
  seen.push(await outcome(() => s.term(Number.NaN)));
  seen.push(await outcome(() => s.byteSize(first, 1.5)));
  for (const i of [snap - 1, snap, snap + 1, last, last + 1]) {
    const term = i >= first - 1 && i <= last ? s.term(i) : 1;
    for (const t of [term, term + 1]) {
      for (const withFile of [true, false])
        seen.push(await outcome(() => s.localSnapshotRefusal(i, t, withFile)));
    }
  }
  return seen;
}

describe("SimLogStore against DurableLogStore", () => {
  it("behaves identically under random writes through DurableLogWriter, across reopens", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmdArb, { minLength: 1, maxLength: 40, size: "medium" }), async (cmds) => {
        const dir = fx.dir();
        const options = { cacheEntries: 3, gcStepEntries: 2 };
        const disk = new SimLogDisk(CONF);
        const real: Side = {
          writer: new DurableLogWriter(fx.open(dir, options)),
          read: (path) => new Uint8Array(readFileSync(path)),
          writeTemp: (path, data) => writeFileSync(path, data),
        };
        const sim: Side = {
          writer: new DurableLogWriter(new SimLogStore(disk, NEXT_TURN)),
          read: (path) => disk.readFile(path),
          writeTemp: (path, data) => disk.writeTemp(path, data),
        };
        try {
          for (const cmd of cmds) {
            if (cmd.t === "reopen") {
              await real.writer.close();
              real.writer = new DurableLogWriter(fx.open(dir, options));
              // A killed process's writes all reach the disk, as the real close's checkpoint takes them.
              if (cmd.crash) disk.crash(true);
              else await sim.writer.close();
              sim.writer = new DurableLogWriter(new SimLogStore(disk, NEXT_TURN));
              const files = readdirSync(join(dir, "snapshots"));
              const simFiles = disk.listFiles();
              expect(simFiles.sealed.length + simFiles.temps.length).toBe(files.length);
            } else {
              const v = view(real.writer.store);
              const expected = await run(cmd, v, real);
              const actual = await run(cmd, v, sim);
              expect(actual, JSON.stringify(cmd)).toEqual(expected);
            }
            expect(await observe(sim), JSON.stringify(cmd)).toEqual(await observe(real));
          }
        } finally {
          await real.writer.close();
          await sim.writer.close().catch(() => undefined);
        }
      }),
      { numRuns: 100 },
    );
  }, 120_000);
});

/** Sync callbacks held until the test runs them: simulated time that only moves when told. */
function heldSyncs() {
  const queue: (() => void)[] = [];
  return {
    options: { schedule: (_delay: number, cb: () => void) => void queue.push(cb), syncDelay: () => 5 },
    runAll(): void {
      for (const cb of queue.splice(0)) cb();
    },
    get waiting(): number {
      return queue.length;
    },
  };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function persist(from: number, to: number, term: number, commit = 0): LogWrite {
  return {
    snapshot: null,
    entries: ents(from, to - from + 1, term, 8),
    hardState: { term, vote: "n1", commit },
  };
}

function commitWrite(s: SimLogStore, w: LogWrite): void {
  expect(s.commit([{ kind: "persist", ...w }])).toEqual([null]);
}

describe("SimLogDisk crashes", () => {
  it.each([
    [false, 0],
    [true, 3],
  ])("a committed, unsynced write: keepUnsynced=%s leaves the log at %i", (keep, last) => {
    const disk = new SimLogDisk(CONF);
    const held = heldSyncs();
    const store = new SimLogStore(disk, held.options);
    commitWrite(store, persist(1, 3, 1));
    expect(store.lastIndex()).toBe(3);
    disk.crash(keep);
    const reopened = new SimLogStore(disk, held.options);
    expect(reopened.lastIndex()).toBe(last);
    expect(reopened.initialState().hardState.term).toBe(keep ? 1 : 0);
  });

  it("a sync covers nothing before its fsync completes, and never resolves synchronously", async () => {
    const disk = new SimLogDisk(CONF);
    const held = heldSyncs();
    const store = new SimLogStore(disk, held.options);
    commitWrite(store, persist(1, 2, 1));
    let settled = false;
    store.sync().then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    await turn();
    expect(settled).toBe(false);
    expect(held.waiting).toBe(1);
    // Power fails with the fsync under way: nothing of it is durable, and the dead process hears nothing.
    disk.crash(false);
    held.runAll();
    await turn();
    expect(settled).toBe(false);
    expect(new SimLogStore(disk, held.options).lastIndex()).toBe(0);
  });

  it("a sync covers what was committed when it started, not what came after", async () => {
    const disk = new SimLogDisk(CONF);
    const held = heldSyncs();
    const store = new SimLogStore(disk, held.options);
    commitWrite(store, persist(1, 2, 1));
    const synced = store.sync();
    commitWrite(store, persist(3, 4, 1));
    held.runAll();
    await synced;
    disk.crash(false);
    expect(new SimLogStore(disk, held.options).lastIndex()).toBe(2);
  });

  it.each([false, true])("a completed sync survives a crash (keepUnsynced=%s)", async (keep) => {
    const disk = new SimLogDisk(CONF);
    const held = heldSyncs();
    const store = new SimLogStore(disk, held.options);
    commitWrite(store, persist(1, 3, 2, 2));
    const synced = store.sync();
    held.runAll();
    await synced;
    disk.crash(keep);
    const reopened = new SimLogStore(disk, held.options);
    expect(reopened.lastIndex()).toBe(3);
    expect(reopened.initialState().hardState).toEqual({ term: 2, vote: "n1", commit: 2 });
    expect(reopened.entries(1, 4, 1e9).map((e) => e.term)).toEqual([2, 2, 2]);
  });

  it("an unsynced compaction is lost on power loss, kept on a process kill", async () => {
    for (const keep of [false, true]) {
      const disk = new SimLogDisk(CONF);
      const held = heldSyncs();
      const store = new SimLogStore(disk, held.options);
      commitWrite(store, persist(1, 5, 1, 5));
      const point = { meta: { index: 4, term: 1, conf: CONF }, file: null, size: 0, checksum: 0 };
      expect(store.commit([{ kind: "record-snapshot", snapshot: point }])).toEqual([null]);
      const synced = store.sync();
      held.runAll();
      await synced;
      store.compact(3);
      expect(store.firstIndex()).toBe(4);
      disk.crash(keep);
      expect(new SimLogStore(disk, held.options).firstIndex()).toBe(keep ? 4 : 1);
    }
  });

  it("temporary files vanish at a crash; at open only the referenced snapshot file is kept", async () => {
    const disk = new SimLogDisk(CONF);
    const store = new SimLogStore(disk, NEXT_TURN);
    const writer = new DurableLogWriter<LogStore>(store);
    const temp = store.snapshotFiles.tempPath();
    disk.writeTemp(temp, new Uint8Array([1, 2, 3]));
    const partial = store.snapshotFiles.receive({ index: 5, term: 1, conf: CONF }, 10);
    await partial.write(0, new Uint8Array(4));
    const meta = { index: 7, term: 2, conf: CONF };
    const data = dataFor(7, 2, 100);
    const kept = store.snapshotFiles.receive(meta, data.byteLength);
    await kept.write(0, data);
    const file = await kept.finish(crc32c(data));
    await writer.write({ snapshot: file, entries: [], hardState: { term: 2, vote: null, commit: 7 } });
    const orphanReceiver = store.snapshotFiles.receive({ index: 9, term: 2, conf: CONF }, 1);
    await orphanReceiver.write(0, new Uint8Array([9]));
    const orphan = await orphanReceiver.finish();
    expect(disk.listFiles().temps.length).toBe(2);
    expect(disk.listFiles().sealed.sort()).toEqual([file.file, orphan.file].sort());

    disk.crash(true);
    expect(disk.listFiles().temps).toEqual([]);
    expect(() => disk.readFile(temp)).toThrow(SimFileMissingError);
    // The dead process's receiver refuses to go on.
    await expect(partial.write(4, new Uint8Array(1))).rejects.toThrow(/after it ended/);
    expect(() => store.lastIndex()).toThrow(/after it ended/);

    const reopened = new SimLogStore(disk, NEXT_TURN);
    expect(disk.listFiles()).toEqual({ sealed: [file.file], temps: [] });
    const path = reopened.verifiedSnapshotPath();
    expect(path).not.toBeNull();
    expect(disk.readFile(path!)).toEqual(data);
  });

  it("a reader keeps a replaced snapshot's bytes after its file is deleted", async () => {
    const disk = new SimLogDisk(CONF);
    const store = new SimLogStore(disk, NEXT_TURN);
    const writer = new DurableLogWriter<LogStore>(store);
    await writer.write(persist(1, 6, 1, 6));
    const source = (index: number, data: Uint8Array): SnapshotSource => ({
      async createSnapshotFile(path) {
        disk.writeTemp(path, data);
        return { index, term: 1 };
      },
      durablePosition: async () => ({ index, term: 1 }),
    });
    const first = dataFor(3, 1, 2000);
    await writer.createSnapshot(source(3, first), () => CONF);
    const old = store.currentSnapshot()!;
    const reader = await store.snapshotFiles.openReader(old);
    await writer.createSnapshot(source(5, dataFor(5, 1, 50)), () => CONF);
    expect(disk.sealedFile(old.file)).toBeUndefined();
    const got = new Uint8Array(first.byteLength);
    for (let at = 0; at < first.byteLength; at += 512) got.set(await reader.readChunk(at, 512), at);
    expect(got).toEqual(first);
    await expect(store.snapshotFiles.openReader(old)).rejects.toThrow(/missing/);
  });

  it("failNow stops the store: later calls throw, the listeners hear of it once", async () => {
    const disk = new SimLogDisk(CONF);
    const held = heldSyncs();
    const store = new SimLogStore(disk, held.options);
    commitWrite(store, persist(1, 2, 1));
    const pending = store.sync();
    const heard: unknown[] = [];
    store.onFailure((err) => heard.push(err));
    const failure = store.failNow(new Error("disk gone"));
    store.failNow(new Error("again"));
    expect(failure).toBeInstanceOf(StorageFailedError);
    expect(heard).toEqual([failure]);
    held.runAll();
    await expect(pending).rejects.toBe(failure);
    expect(() => store.lastIndex()).toThrow(failure);
    expect(() => store.commit([])).toThrow(failure);
    await expect(store.sync()).rejects.toBe(failure);
    // The failed sync made nothing durable.
    await store.close();
    expect(new SimLogStore(disk, held.options).lastIndex()).toBe(0);
  });
});
