import { writeFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { crc32c } from "../checksum/crc32c.js";
import { MemoryStorage } from "../raft/memory-storage.js";
import type { Entry, HardState, SnapshotMeta } from "../raft/types.js";
import type { DurableLogStore } from "./durable-log-store.js";
import { DurableLogWriter, type LogWrite } from "./durable-log-writer.js";
import { CONF, dataFor, storageFixture } from "./test-fixtures/storage-fixture.js";

const fx = storageFixture();

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
  | { t: "install"; ahead: number; tail: number; size: number; bump: boolean }
  | { t: "stale-install" }
  | { t: "create"; pick: number; size: number }
  | { t: "compact"; pick: number }
  | { t: "reopen" };

const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      t: fc.constant("append" as const),
      back: fc.nat(6),
      count: fc.integer({ min: 1, max: 8 }),
      bump: fc.boolean(),
      size: fc.nat(120),
      hard: fc.boolean(),
      vote: fc.boolean(),
      commit: fc.nat(4),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ t: "gap" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant("install" as const),
      ahead: fc.integer({ min: 1, max: 12 }),
      tail: fc.nat(3),
      size: fc.nat(3000),
      bump: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ t: "stale-install" as const }) },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant("create" as const), pick: fc.nat(40), size: fc.nat(500) }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("compact" as const), pick: fc.nat(40) }) },
  { weight: 1, arbitrary: fc.constant({ t: "reopen" as const }) },
);

/** One storage operation, applied to both stores; each side returns the error it threw, if any. */
interface Op {
  memory(m: MemoryStorage): void;
  durable(w: DurableLogWriter<DurableLogStore>): Promise<void>;
}

/** A snapshot from the leader: received into its file on the durable side, handed over whole in memory. */
function install(meta: SnapshotMeta, data: Uint8Array, entries: Entry[], hardState: HardState | null): Op {
  return {
    memory(m) {
      m.applySnapshot({ meta, size: data.byteLength, checksum: crc32c(data) }, data);
      m.append(entries);
      if (hardState !== null) m.setHardState(hardState);
    },
    async durable(w) {
      const file = await w.store.snapshotFiles.store(meta, data);
      await w.write({ snapshot: file, entries, hardState });
    },
  };
}

function persist(write: LogWrite): Op {
  return {
    memory(m) {
      m.append(write.entries);
      if (write.hardState !== null) m.setHardState(write.hardState);
    },
    durable: (w) => w.write(write),
  };
}

function ents(from: number, count: number, term: number, size: number): Entry[] {
  return Array.from({ length: count }, (_, i) => ({
    index: from + i,
    term,
    type: i % 5 === 4 ? ("noop" as const) : ("normal" as const),
    data: dataFor(from + i, term, size),
  }));
}

/** Turns an abstract command into an operation valid for a Raft log in the state `m` is in (or not, by design). */
function interpret(cmd: Exclude<Cmd, { t: "reopen" }>, m: MemoryStorage): Op {
  const last = m.lastIndex();
  const hs = m.initialState().hardState;
  const snap = m.snapshot().meta.index;
  const floor = Math.max(hs.commit, snap);
  switch (cmd.t) {
    case "append": {
      const start = Math.max(last + 1 - cmd.back, floor + 1);
      const term = Math.max(m.term(start - 1), hs.term, 1) + (cmd.bump ? 1 : 0);
      const newLast = start + cmd.count - 1;
      let hardState: HardState | null = null;
      if (cmd.hard || term > hs.term) {
        const t = Math.max(hs.term, term);
        const vote = t === hs.term ? (hs.vote ?? (cmd.vote ? "n2" : null)) : cmd.vote ? "n1" : null;
        hardState = {
          term: t,
          vote,
          commit: hs.commit + Math.floor((cmd.commit * (newLast - hs.commit)) / 4),
        };
      }
      return persist({ snapshot: null, entries: ents(start, cmd.count, term, cmd.size), hardState });
    }
    case "stale-install":
      if (snap === 0) return interpret({ t: "gap" }, m);
      return install({ index: snap, term: 1, conf: CONF }, new Uint8Array(3), [], null);
    case "gap":
      return persist({
        snapshot: null,
        entries: ents(last + 2, 1, Math.max(hs.term, 1), 4),
        hardState: null,
      });
    case "install": {
      const index = floor + cmd.ahead;
      const term = Math.max(hs.term, 1) + (cmd.bump ? 1 : 0);
      const meta = { index, term, conf: CONF };
      return install(meta, dataFor(index, term, cmd.size), ents(index + 1, cmd.tail, term, 10), {
        term,
        vote: term === hs.term ? hs.vote : null,
        commit: index,
      });
    }
    case "create": {
      // Mostly a valid index in (snap, last]; sometimes the snapshot's own or one past the log.
      const span = last - snap + 2;
      const index = snap + (cmd.pick % span);
      const term = index <= last && index >= m.firstIndex() - 1 ? m.term(index) : 1;
      const data = dataFor(index, 99, cmd.size);
      return {
        memory: (mem) => void mem.createSnapshot(index, CONF, data),
        durable: (w) =>
          w
            .createSnapshot(
              {
                async createSnapshotFile(path) {
                  writeFileSync(path, data);
                  return { index, term };
                },
                durablePosition: async () => ({ index, term }),
              },
              () => CONF,
            )
            .then(() => undefined),
      };
    }
    case "compact": {
      const offset = m.firstIndex() - 1;
      const index = offset - 1 + (cmd.pick % (snap - offset + 3));
      return {
        memory: (mem) => mem.compact(index),
        durable: async (w) => w.store.compact(index),
      };
    }
  }
}

async function outcome(fn: () => unknown): Promise<unknown> {
  try {
    return { ok: await fn() };
  } catch (err) {
    return { error: (err as Error).constructor.name };
  }
}

/** Everything a reader of LogStorage can observe, with errors reduced to their class. */
async function observe(s: MemoryStorage | DurableLogStore): Promise<unknown[]> {
  const first = s.firstIndex();
  const last = s.lastIndex();
  const seen: unknown[] = [s.initialState(), first, last, s.snapshot()];
  for (let i = first - 2; i <= last + 1; i++) seen.push(await outcome(() => s.term(i)));
  const los = [first - 1, first, Math.floor((first + last) / 2), last];
  for (const lo of los) {
    for (const hi of [lo, lo + 1, last + 1, last + 2]) {
      for (const max of [0, 100, 1e9]) seen.push(await outcome(() => s.entries(lo, hi, max)));
    }
  }
  return seen;
}

describe("DurableLogStore against MemoryStorage", () => {
  it("behaves identically under random operation sequences, across reopens", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmdArb, { minLength: 1, maxLength: 30 }), async (cmds) => {
        const dir = fx.dir();
        const options = { cacheEntries: 3, gcStepEntries: 2 };
        const memory = new MemoryStorage(CONF);
        let writer = new DurableLogWriter(fx.open(dir, options));
        try {
          for (const cmd of cmds) {
            if (cmd.t === "reopen") {
              await writer.close();
              writer = new DurableLogWriter(fx.open(dir, options));
            } else {
              const op = interpret(cmd, memory);
              const expected = await outcome(() => op.memory(memory));
              const actual = await outcome(() => op.durable(writer));
              expect(actual, JSON.stringify(cmd)).toEqual(expected);
            }
            expect(await observe(writer.store)).toEqual(await observe(memory));
          }
        } finally {
          await writer.close();
        }
      }),
      { numRuns: 40 },
    );
  }, 60_000);
});
