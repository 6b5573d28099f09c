import { describe, expect, it } from "vitest";
import type { LogStorage } from "./log-storage.js";
import type { RaftOptions } from "./raft-config.js";
import { RaftNode } from "./raft-node.js";
import { InMemoryRaftCluster, text } from "./test-fixtures/in-memory-raft-cluster.js";
import { checkLogMatching, InvariantChecker } from "./test-fixtures/invariants.js";
import type { ConfState, Entry, HardState, Message, Ready, Snapshot, SnapshotChunkMessage } from "./types.js";

const VOTERS = ["a", "b", "c"];
const CHUNK = 16;
const SNAP_DATA = Uint8Array.from({ length: 100 }, (_, i) => (i * 7) % 251);
const NEWER_DATA = Uint8Array.from({ length: 50 }, (_, i) => i + 1);

/**
 * The leader's storage with lazy snapshots: while `available` is false it has compacted its log past
 * a point it has no snapshot file for yet, and answers `snapshot()` with null (counting the asks), as
 * the durable store does while it makes one. The MemoryStorage below stays the driver's disk: the
 * chunks it sends are read from it.
 */
class LazySnapshotStorage implements LogStorage {
  available = true;
  asked = 0;

  constructor(private readonly inner: LogStorage) {}

  initialState(): { hardState: HardState; conf: ConfState } {
    return this.inner.initialState();
  }
  entries(lo: number, hi: number, maxBytes: number): readonly Entry[] {
    return this.inner.entries(lo, hi, maxBytes);
  }
  term(index: number): number {
    return this.inner.term(index);
  }
  firstIndex(): number {
    return this.inner.firstIndex();
  }
  lastIndex(): number {
    return this.inner.lastIndex();
  }
  snapshot(): Snapshot | null {
    if (this.available) return this.inner.snapshot();
    this.asked++;
    return null;
  }
}

interface Lagging {
  c: InMemoryRaftCluster;
  readys: Map<string, Ready[]>;
  /** The leader's lazy storage (rebuilt if "a" restarts, which these tests do not do). */
  lazy: () => LazySnapshotStorage;
}

/**
 * a leads over lazy storage; c misses entries 2..11 while isolated; a snapshots at 9 and compacts, so
 * c can only be caught up by a snapshot (then 10..11 by appends).
 */
function lagging(extra: Partial<RaftOptions> = {}): Lagging {
  const readys = new Map<string, Ready[]>(VOTERS.map((id) => [id, []]));
  const checker = new InvariantChecker();
  let lazy: LazySnapshotStorage | null = null;
  const c = new InMemoryRaftCluster(
    VOTERS,
    { snapshotChunkBytes: CHUNK, maxInflightSnapshotChunks: 2, ...extra },
    1,
    {
      createNode: (options) => {
        if (options.id !== "a") return new RaftNode(options);
        lazy = new LazySnapshotStorage(options.storage);
        return new RaftNode({ ...options, storage: lazy });
      },
      onReady: (id, rd, m) => {
        checker.check(id, rd, m);
        readys.get(id)!.push(rd);
      },
    },
  );
  c.elect("a");
  c.isolate("c");
  for (let i = 0; i < 10; i++) c.node("a").propose(text(`v${i}`));
  c.settle();
  c.tickAll(1, ["a", "b"]);
  expect(c.node("a").status().applied).toBe(11);
  const storage = c.member("a").storage;
  storage.createSnapshot(9, { voters: VOTERS }, SNAP_DATA);
  storage.compact(9);
  return {
    c,
    readys,
    lazy: () => {
      if (lazy === null) throw new Error("the leader was built without lazy storage");
      return lazy;
    },
  };
}

const chunksTo = (ms: readonly Message[], to: string): SnapshotChunkMessage[] =>
  ms.filter((m): m is SnapshotChunkMessage => m.type === "snapshot-chunk" && m.to === to);

/** Every chunk to `to` the leader's core handed out from its `from`-th Ready on (before the driver drops any). */
const coreChunksTo = (readys: readonly Ready[], to: string, from = 0): SnapshotChunkMessage[] =>
  readys.slice(from).flatMap((rd) => chunksTo(rd.messages, to));

describe("a snapshot temporarily unavailable from storage", () => {
  it("sends nothing while storage prepares one, asks again each heartbeat, then catches the follower up", () => {
    const { c, readys, lazy } = lagging();
    lazy().available = false;
    c.heal();
    // Each heartbeat answer from c (behind the log) goes through sendAppend to startSnapshot again.
    let asked = lazy().asked;
    for (let round = 0; round < 4; round++) {
      c.tickAll(1);
      expect(lazy().asked).toBeGreaterThan(asked);
      asked = lazy().asked;
    }
    expect(coreChunksTo(readys.get("a")!, "c")).toEqual([]);
    expect(c.node("a").status().progress.c).toMatchObject({ state: "probe", match: 1 });
    expect(c.node("c").status().commit).toBe(1);

    // Storage has made its snapshot: the next heartbeat round sends it.
    lazy().available = true;
    c.tickAll(1);
    const chunks = chunksTo(c.delivered, "c");
    expect(chunks.map((m) => m.offset)).toEqual([0, 16, 32, 48, 64, 80, 96]);
    for (const m of chunks) expect(m.meta.index).toBe(9);
    const installed = readys.get("c")!.filter((rd) => rd.snapshot !== null);
    expect(installed.map((rd) => rd.snapshot!.meta.index)).toEqual([9]);
    expect(Array.from(c.member("c").storage.snapshotData())).toEqual(Array.from(SNAP_DATA));

    // Then appends: 10 and 11, and a new proposal.
    c.tickAll(1);
    expect(c.appliedData("c")).toEqual(["v8", "v9"]);
    expect(c.node("a").status().progress.c!.state).toBe("replicate");
    c.node("a").propose(text("after"));
    c.settle();
    c.tickAll(1);
    expect(c.appliedData("c")).toEqual(["v8", "v9", "after"]);
    checkLogMatching(c);
  });

  it("a follower in replicate state that falls behind the compacted log is probed until the snapshot exists", () => {
    // A window of two appends: while c is cut off, its progress stays `replicate` with next = 4.
    const { c, readys, lazy } = lagging({ maxInflightMsgs: 2 });
    expect(c.node("a").status().progress.c).toMatchObject({ state: "replicate", match: 1, next: 4 });
    lazy().available = false;
    c.heal();
    c.tickAll(1);
    expect(lazy().asked).toBeGreaterThan(0);
    expect(c.node("a").status().progress.c).toMatchObject({ state: "probe", match: 1 });
    let asked = lazy().asked;
    for (let round = 0; round < 3; round++) {
      c.tickAll(1);
      expect(lazy().asked).toBeGreaterThan(asked);
      asked = lazy().asked;
    }
    expect(coreChunksTo(readys.get("a")!, "c")).toEqual([]);

    lazy().available = true;
    c.tickAll(1);
    expect(chunksTo(c.delivered, "c").length).toBeGreaterThan(0);
    c.tickAll(2);
    expect(c.node("c").status().commit).toBe(11);
    expect(c.appliedData("c")).toEqual(["v8", "v9"]);
    expect(c.node("a").status().progress.c!.state).toBe("replicate");
  });

  describe("while a transfer is under way", () => {
    /**
     * Mid-transfer, a compacts past 9 to 11 with no snapshot file yet: storage answers null, and the
     * file of 9 is gone (the driver can no longer read its chunks). The new snapshot's bytes are kept
     * in the MemoryStorage, standing for the file storage makes once asked.
     */
    function supersede(c: InMemoryRaftCluster, lazy: LazySnapshotStorage): void {
      lazy.available = false;
      const st = c.member("a").storage;
      st.createSnapshot(11, { voters: VOTERS }, NEWER_DATA);
      st.compact(11);
    }

    it.each([
      ["the follower's rejection of a chunk after a lost one", "reject"],
      ["a heartbeat that finds the transfer stalled", "stall"],
    ] as const)("abandons it on %s, then sends the newer snapshot once there is one", (_, trigger) => {
      const { c, readys, lazy } = lagging();
      let supersededAt: number | null = null;
      let rejections = 0;
      c.filter = (m) => {
        if (supersededAt === null && m.type === "snapshot-chunk" && m.to === "c" && m.offset === 32) {
          supersede(c, lazy());
          supersededAt = readys.get("a")!.length;
          // Lost: c then rejects the next chunk (after the gap), or no answer comes at all.
          return false;
        }
        if (supersededAt !== null && m.type === "snapshot-chunk-response" && m.from === "c") {
          // Until storage has the newer snapshot: its own transfer must get its answers.
          if (trigger === "stall" && !lazy().available) return false;
          if (m.reject) rejections++;
        }
        return true;
      };
      c.heal();
      c.tickAll(4);
      expect(supersededAt).not.toBeNull();
      if (trigger === "reject") expect(rejections).toBeGreaterThan(0);
      // Abandoned: no chunk of 9 is sent again after its file is gone; a probes and asks storage.
      expect(coreChunksTo(readys.get("a")!, "c", supersededAt!)).toEqual([]);
      expect(c.node("a").status().progress.c!.state).toBe("probe");
      expect(lazy().asked).toBeGreaterThan(0);
      expect(c.node("c").status().commit).toBe(1);

      lazy().available = true;
      c.tickUntil(() => c.node("c").status().commit === 11, 10);
      const after = coreChunksTo(readys.get("a")!, "c", supersededAt!);
      expect(after.length).toBeGreaterThan(0);
      for (const m of after) expect(m.meta.index).toBe(11);
      const installed = readys.get("c")!.filter((rd) => rd.snapshot !== null);
      expect(installed.map((rd) => rd.snapshot!.meta.index)).toEqual([11]);
      expect(Array.from(c.member("c").storage.snapshotData())).toEqual(Array.from(NEWER_DATA));
      c.tickAll(1);
      expect(c.node("a").status().progress.c!.state).toBe("replicate");
      checkLogMatching(c);
    });
  });
});
