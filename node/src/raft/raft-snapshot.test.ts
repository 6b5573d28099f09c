import { describe, expect, it } from "vitest";
import { crc32c } from "../checksum/crc32c.js";
import { MemorySnapshotSink } from "./memory-snapshot-sink.js";
import type { RaftOptions } from "./raft-config.js";
import { SeededRandom } from "./seeded-random.js";
import { SnapshotInbox } from "./snapshot-inbox.js";
import {
  append,
  appendResponse,
  entry,
  ofType,
  Solo,
  snapshotChunk,
  storageWithLog,
} from "./test-fixtures/helpers.js";
import { InMemoryRaftCluster, text } from "./test-fixtures/in-memory-raft-cluster.js";
import { checkLogMatching, InvariantChecker } from "./test-fixtures/invariants.js";
import type { Message, Ready, Snapshot, SnapshotChunkMessage, SnapshotMeta } from "./types.js";

const VOTERS = ["a", "b", "c"];
const CHUNK = 16;
const WINDOW = 2;
const SNAP_DATA = Uint8Array.from({ length: 100 }, (_, i) => (i * 7) % 251);

interface Lagging {
  c: InMemoryRaftCluster;
  readys: Map<string, Ready[]>;
  snapIndex: number;
}

/**
 * a leads; c misses entries 2..11 while isolated; a snapshots at 9 and compacts, so c can only be
 * caught up by a snapshot (then entries 10..11 by appends).
 */
function lagging(extra: Partial<RaftOptions> = {}): Lagging {
  const readys = new Map<string, Ready[]>(VOTERS.map((id) => [id, []]));
  const checker = new InvariantChecker();
  const c = new InMemoryRaftCluster(
    VOTERS,
    { snapshotChunkBytes: CHUNK, maxInflightSnapshotChunks: WINDOW, ...extra },
    1,
    {
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
  expect(storage.firstIndex()).toBe(10);
  return { c, readys, snapIndex: 9 };
}

const chunksTo = (ms: readonly Message[], to: string): SnapshotChunkMessage[] =>
  ms.filter((m): m is SnapshotChunkMessage => m.type === "snapshot-chunk" && m.to === to);

/** The most chunks ever sent beyond the follower's acknowledged offset, walking delivery order. */
function maxUnackedChunks(delivered: readonly Message[], to: string): number {
  let sentEnd = 0;
  let acked = 0;
  let max = 0;
  for (const m of delivered) {
    if (m.type === "snapshot-chunk" && m.to === to) {
      sentEnd = Math.max(sentEnd, m.offset + m.length);
      max = Math.max(max, Math.ceil((sentEnd - acked) / CHUNK));
    } else if (m.type === "snapshot-chunk-response" && m.from === to) {
      acked = m.reject ? m.nextOffset : Math.max(acked, m.nextOffset);
      sentEnd = Math.max(acked, m.reject ? acked : sentEnd);
    }
  }
  return max;
}

describe("snapshots", () => {
  it("a follower behind the compacted log is caught up by chunked InstallSnapshot, then by appends", () => {
    const { c, readys, snapIndex } = lagging();
    c.heal();
    c.tickAll(3);
    const chunks = chunksTo(c.delivered, "c");
    expect(chunks.length).toBe(Math.ceil(SNAP_DATA.byteLength / CHUNK));
    expect(chunks.map((m) => m.offset)).toEqual([0, 16, 32, 48, 64, 80, 96]);
    for (const m of chunks) {
      expect(m.meta.index).toBe(snapIndex);
      expect(m.totalBytes).toBe(SNAP_DATA.byteLength);
      expect(m.checksum).toBe(crc32c(SNAP_DATA));
      expect(m.length).toBeLessThanOrEqual(CHUNK);
      // The sender filled in the bytes the core left out.
      expect(Array.from(m.data!)).toEqual(Array.from(SNAP_DATA.subarray(m.offset, m.offset + m.length)));
    }
    // The core's own chunks carry no bytes: the driver reads them from the snapshot as it sends.
    const fromCore = readys.get("a")!.flatMap((rd) => chunksTo(rd.messages, "c"));
    expect(fromCore.length).toBeGreaterThan(0);
    for (const m of fromCore) expect(m.data).toBeNull();
    expect(maxUnackedChunks(c.delivered, "c")).toBe(WINDOW);

    // Installed once, whole, atomically.
    const withSnap = readys.get("c")!.filter((rd) => rd.snapshot !== null);
    expect(withSnap).toHaveLength(1);
    const snap = withSnap[0]!.snapshot!;
    expect(snap).toEqual({
      meta: { index: 9, term: 1, conf: { voters: VOTERS } },
      size: SNAP_DATA.byteLength,
      checksum: crc32c(SNAP_DATA),
    });
    expect(Array.from(c.member("c").storage.snapshotData())).toEqual(Array.from(SNAP_DATA));
    expect(withSnap[0]!.committedEntries).toEqual([]);
    expect(withSnap[0]!.hardState?.commit).toBe(9);

    // Then normal replication: 10 and 11 arrive as entries, and new proposals flow.
    const st = c.member("c").storage;
    expect(st.firstIndex()).toBe(10);
    expect(st.lastIndex()).toBe(11);
    expect(c.appliedData("c")).toEqual(["v8", "v9"]);
    expect(c.node("a").status().progress.c!.state).toBe("replicate");
    c.node("a").propose(text("after"));
    c.settle();
    c.tickAll(1);
    expect(c.appliedData("c")).toEqual(["v8", "v9", "after"]);
    checkLogMatching(c);
  });

  it("nothing of the snapshot is visible on the follower before its last chunk arrives", () => {
    const { c } = lagging();
    const seen: { offset: number; commit: number; first: number }[] = [];
    c.filter = (m) => {
      if (m.type === "snapshot-chunk" && m.to === "c") {
        c.process("c");
        seen.push({
          offset: m.offset,
          commit: c.node("c").status().commit,
          first: c.member("c").storage.firstIndex(),
        });
      }
      return true;
    };
    c.heal();
    c.tickAll(3);
    expect(seen.length).toBeGreaterThanOrEqual(7);
    for (const s of seen.filter((x) => x.offset < 96)) expect(s).toMatchObject({ commit: 1, first: 1 });
    expect(c.node("c").status().commit).toBe(11);
  });

  it("a lost chunk is detected and resent; the snapshot arrives intact", () => {
    const { c, readys } = lagging();
    let dropped = 0;
    c.filter = (m) => {
      if (m.type === "snapshot-chunk" && m.to === "c" && m.offset === 32 && dropped === 0) {
        dropped++;
        return false;
      }
      return true;
    };
    c.heal();
    c.tickAll(4);
    expect(dropped).toBe(1);
    expect(chunksTo(c.delivered, "c").filter((m) => m.offset === 32)).toHaveLength(1);
    expect(chunksTo(c.sent, "c").filter((m) => m.offset === 32).length).toBeGreaterThanOrEqual(2);
    const snaps = readys.get("c")!.filter((rd) => rd.snapshot);
    expect(snaps).toHaveLength(1);
    expect(Array.from(c.member("c").storage.snapshotData())).toEqual(Array.from(SNAP_DATA));
    expect(c.node("c").status().commit).toBe(11);
  });

  it("a chunk corrupted on the way is refused: the sender starts over and only intact bytes are installed", () => {
    const { c, readys } = lagging();
    let corrupted = 0;
    c.network = (batch) => ({
      deliver: batch.map((m) => {
        if (m.type !== "snapshot-chunk" || m.to !== "c" || m.offset !== 32 || corrupted > 0) return m;
        corrupted++;
        const data = m.data!.slice();
        data[3] = data[3]! ^ 0x40;
        return { ...m, data };
      }),
      hold: [],
    });
    c.heal();
    c.tickUntil(() => c.node("c").status().commit === 11, 30);
    expect(corrupted).toBe(1);
    expect(c.member("c").inbox.refusedSnapshots).toBe(1);
    // The follower asked to start over at the last chunk, and the leader resent from 0.
    const refusal = c.delivered.find(
      (m) => m.type === "snapshot-chunk-response" && m.from === "c" && m.reject && m.nextOffset === 0,
    );
    expect(refusal).toBeDefined();
    expect(chunksTo(c.delivered, "c").filter((m) => m.offset === 0).length).toBeGreaterThanOrEqual(2);
    expect(readys.get("c")!.filter((rd) => rd.snapshot)).toHaveLength(1);
    expect(Array.from(c.member("c").storage.snapshotData())).toEqual(Array.from(SNAP_DATA));
  });

  it("a leader that snapshots again mid-transfer moves the transfer to the newer snapshot", () => {
    const { c } = lagging();
    let replaced = false;
    c.filter = (m) => {
      if (!replaced && m.type === "snapshot-chunk" && m.to === "c" && m.offset === 32) {
        // The old snapshot's file is gone by the time its next chunks would be read.
        replaced = true;
        const st = c.member("a").storage;
        st.createSnapshot(
          11,
          { voters: VOTERS },
          Uint8Array.from({ length: 50 }, (_, i) => i + 1),
        );
        st.compact(11);
        return false;
      }
      return true;
    };
    c.heal();
    c.tickUntil(() => c.node("c").status().commit === 11, 30);
    expect(c.member("c").storage.snapshot().meta.index).toBe(11);
    expect(c.member("c").storage.snapshotData().byteLength).toBe(50);
    expect(c.node("a").status().progress.c!.state).toBe("replicate");
  });

  it("the transfer resumes after the follower's answers are all lost for a while", () => {
    const { c, readys } = lagging();
    let block = true;
    c.filter = (m) => !(block && m.type === "snapshot-chunk-response");
    c.heal();
    c.tickAll(2);
    block = false;
    c.tickAll(4);
    expect(readys.get("c")!.filter((rd) => rd.snapshot)).toHaveLength(1);
    expect(c.node("c").status().commit).toBe(11);
    expect(c.node("a").status().progress.c!.state).toBe("replicate");
  });

  it("answers to extra heartbeats within one interval (read barriers) do not make a transfer stalled", () => {
    const { c, readys } = lagging();
    // c's acknowledgements are late (a follower acknowledges once a chunk is on its disk), not lost.
    const late: Message[] = [];
    c.filter = (m) => {
      if (m.type !== "snapshot-chunk-response" || m.from !== "c") return true;
      late.push(m);
      return false;
    };
    c.heal();
    c.tick("a");
    c.settle();
    expect(late.length).toBeGreaterThan(0);
    const sent = readys.get("a")!.length;
    // Each read broadcasts a heartbeat, and c answers every one, all within the same interval.
    for (const id of ["r1", "r2", "r3"]) {
      c.node("a").readIndex(id);
      c.settle();
    }
    const resent = readys
      .get("a")!
      .slice(sent)
      .flatMap((rd) => chunksTo(rd.messages, "c"));
    expect(resent).toEqual([]);

    c.filter = () => true;
    const a = c.member("a");
    for (const m of late.splice(0)) a.inbox.step(a.raft, m);
    c.tickUntil(() => c.node("c").status().commit === 11, 20);
    expect(readys.get("c")!.filter((rd) => rd.snapshot)).toHaveLength(1);
  });

  it("the leader recovers when the follower's final answer after installing is lost", () => {
    const { c, readys } = lagging();
    let dropped = 0;
    c.filter = (m) => {
      if (
        m.from === "c" &&
        (m.type === "append-response" || m.type === "snapshot-chunk-response") &&
        dropped < 2
      ) {
        if (m.type === "append-response" || (m.type === "snapshot-chunk-response" && m.nextOffset === 100)) {
          dropped++;
          return false;
        }
      }
      return true;
    };
    c.heal();
    c.tickAll(5);
    expect(dropped).toBe(2);
    expect(readys.get("c")!.filter((rd) => rd.snapshot)).toHaveLength(1);
    expect(c.node("c").status().commit).toBe(11);
    expect(c.node("a").status().progress.c!.state).toBe("replicate");
  });

  it("chunks reordered, duplicated and delayed still make one intact snapshot", () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const { c, readys } = lagging();
      const rng = new SeededRandom(seed);
      c.network = (batch) => {
        const deliver: Message[] = [];
        const hold: Message[] = [];
        for (const m of batch) {
          if (rng.chance(0.2)) hold.push(m);
          else deliver.push(m);
          if (rng.chance(0.2)) deliver.push(m);
        }
        for (let i = deliver.length - 1; i > 0; i--) {
          const j = rng.nextInt(i + 1);
          [deliver[i], deliver[j]] = [deliver[j]!, deliver[i]!];
        }
        return { deliver, hold };
      };
      c.heal();
      c.tickUntil(() => c.node("c").status().commit === 11, 60);
      const snaps = readys.get("c")!.filter((rd) => rd.snapshot);
      expect(snaps).toHaveLength(1);
      expect(Array.from(c.member("c").storage.snapshotData())).toEqual(Array.from(SNAP_DATA));
    }
  });

  it("a follower that restarts in the middle of a transfer still gets the whole snapshot", () => {
    const { c, readys } = lagging();
    let delivered = 0;
    c.filter = (m) => {
      if (m.type === "snapshot-chunk" && m.to === "c" && ++delivered === 3) {
        c.restart("c");
        readys.set("c", []);
      }
      return true;
    };
    c.heal();
    c.tickUntil(() => c.node("c").status().commit === 11, 30);
    const snaps = readys.get("c")!.filter((rd) => rd.snapshot);
    expect(snaps).toHaveLength(1);
    expect(Array.from(c.member("c").storage.snapshotData())).toEqual(Array.from(SNAP_DATA));
    expect(c.appliedData("c")).toEqual(["v8", "v9"]);
  });

  it("a snapshot the follower already covers is not installed again", () => {
    const { c, readys } = lagging();
    c.heal();
    c.tickAll(3);
    const meta = c.member("a").storage.snapshot().meta;
    // Replay every chunk, as a duplicating network would.
    for (const m of chunksTo(c.delivered, "c")) c.node("c").step(m);
    c.settle();
    expect(readys.get("c")!.filter((rd) => rd.snapshot)).toHaveLength(1);
    expect(meta.index).toBe(9);
    // b is up to date: compaction on the leader does not make it a snapshot target.
    expect(chunksTo(c.sent, "b")).toEqual([]);
  });

  it("an up-to-date follower is never sent a snapshot after the leader compacts", () => {
    const c = new InMemoryRaftCluster(VOTERS, { snapshotChunkBytes: CHUNK });
    c.elect("a");
    for (let i = 0; i < 5; i++) c.node("a").propose(text(`v${i}`));
    c.settle();
    c.tickAll(1);
    const s = c.member("a").storage;
    s.createSnapshot(6, { voters: VOTERS }, SNAP_DATA);
    s.compact(6);
    c.node("a").propose(text("x"));
    c.settle();
    c.tickAll(3);
    expect(c.sent.filter((m) => m.type === "snapshot-chunk")).toEqual([]);
    expect(c.appliedData("b").at(-1)).toBe("x");
  });

  it("a follower restarted after installing resumes from the snapshot without re-applying it", () => {
    const { c } = lagging();
    c.heal();
    c.tickAll(3);
    c.restart("c");
    expect(c.node("c").status()).toMatchObject({ commit: 11, applied: 9 });
    c.tickAll(2);
    expect(c.member("c").applied.map((e) => e.index)).toEqual([10, 11]);
  });

  describe("on the follower, chunk by chunk", () => {
    const meta: SnapshotMeta = { index: 20, term: 2, conf: { voters: VOTERS } };
    const data = Uint8Array.from({ length: 40 }, (_, i) => i);
    const sum = crc32c(data);
    const chunk = (offset: number, len = 16): SnapshotChunkMessage =>
      snapshotChunk("b", "a", 2, meta, offset, data.subarray(offset, Math.min(40, offset + len)), 40, sum);
    const follower = (): Solo =>
      new Solo({ storage: storageWithLog(VOTERS, [1, 1, 2], { term: 2, commit: 2 }) });
    const responses = (ms: readonly Message[]) =>
      ofType(ms, "snapshot-chunk-response").map((m) => [m.nextOffset, m.reject]);

    it("acknowledges each chunk and installs at the last one", () => {
      const s = follower();
      let h = s.step(chunk(0));
      expect(responses(h.messages)).toEqual([[16, false]]);
      expect(h.snapshots).toEqual([]);
      h = s.step(chunk(16));
      expect(responses(h.messages)).toEqual([[32, false]]);
      h = s.step(chunk(32));
      expect(responses(h.messages)).toEqual([[40, false]]);
      expect(h.snapshots).toHaveLength(1);
      expect(Array.from(s.storage.snapshotData())).toEqual(Array.from(data));
      expect(ofType(h.messages, "append-response")).toMatchObject([{ index: 20, reject: false }]);
      expect(s.node.status()).toMatchObject({ commit: 20, lastIndex: 20, applied: 20 });
      expect(s.storage.firstIndex()).toBe(21);
      expect(h.committed).toEqual([]);
    });

    it("a duplicate or a chunk after a gap does not advance what it expects next", () => {
      const s = follower();
      s.step(chunk(0));
      expect(responses(s.step(chunk(0)).messages)).toEqual([[16, false]]);
      const gap = s.step(chunk(32));
      expect(gap.snapshots).toEqual([]);
      expect(ofType(gap.messages, "snapshot-chunk-response").map((m) => m.nextOffset)).toEqual([16]);
      // Once the missing chunk arrives and the later one is resent, the snapshot is whole.
      let h = s.step(chunk(16));
      if (h.snapshots.length === 0) h = s.step(chunk(32));
      expect(h.snapshots).toHaveLength(1);
      expect(Array.from(s.storage.snapshotData())).toEqual(Array.from(data));
      expect(s.node.status().commit).toBe(20);
    });

    it("refuses a snapshot whose bytes fail the checksum, and takes the intact one sent again", () => {
      const s = follower();
      s.step(chunk(0), chunk(16));
      const bad = data.slice(32, 40);
      bad[0] = bad[0]! ^ 1;
      const h = s.step(snapshotChunk("b", "a", 2, meta, 32, bad, 40, sum));
      expect(h.snapshots).toEqual([]);
      expect(responses(h.messages)).toEqual([[0, true]]);
      expect(s.inbox.refusedSnapshots).toBe(1);
      expect(s.node.status().commit).toBe(2);
      // The sender starts over; nothing of the refused bytes is kept.
      expect(responses(s.step(chunk(16)).messages)).toEqual([[0, true]]);
      s.step(chunk(0), chunk(16));
      expect(s.step(chunk(32)).snapshots).toHaveLength(1);
      expect(Array.from(s.storage.snapshotData())).toEqual(Array.from(data));
    });

    it("the core counts a chunk only when the driver keeps its bytes", () => {
      const s = follower();
      s.step(chunk(0));
      expect(s.node.takesSnapshotChunk(chunk(16))).toBe(true);
      expect(s.node.takesSnapshotChunk(chunk(0))).toBe(false);
      expect(s.node.takesSnapshotChunk(chunk(32))).toBe(false);
      expect(s.node.incomingSnapshot()).toMatchObject({ received: 16, totalBytes: 40, checksum: sum });
      // A driver that lost what it received (restarted its file) makes the core start over.
      s.node.refuseSnapshotChunk(chunk(16));
      expect(s.node.incomingSnapshot()).toBeNull();
      expect(s.node.takesSnapshotChunk(chunk(16))).toBe(false);
      expect(s.node.takesSnapshotChunk(chunk(0))).toBe(true);
    });

    it("a follower that restarted mid-transfer asks to start over", () => {
      const s = follower();
      s.step(chunk(0));
      const restarted = new Solo({ storage: s.storage });
      expect(responses(restarted.step(chunk(16)).messages)).toEqual([[0, true]]);
      restarted.step(chunk(0), chunk(16));
      expect(restarted.step(chunk(32)).snapshots).toHaveLength(1);
    });

    it("drops a half-received snapshot, bytes included, once the log has caught up past it", () => {
      const s = follower();
      const sinks: MemorySnapshotSink[] = [];
      const inbox = new SnapshotInbox(() => {
        const sink = new MemorySnapshotSink();
        sinks.push(sink);
        return sink;
      });
      inbox.step(s.node, chunk(0));
      expect(s.node.incomingSnapshot()).not.toBeNull();
      // Its sender is gone; the next leader brings the follower past index 20 by appends instead.
      const entries = Array.from({ length: 20 }, (_, i) => entry(4 + i, 3));
      inbox.step(s.node, append("c", "a", 3, 3, 2, entries, 23));
      expect(s.node.status().commit).toBe(23);
      expect(s.node.incomingSnapshot()).toBeNull();
      expect(sinks.map((sink) => sink.aborted)).toEqual([true]);
    });

    it("a newer snapshot replaces a partial older one", () => {
      const s = follower();
      s.step(chunk(0));
      const newer: SnapshotMeta = { ...meta, index: 25 };
      const h = s.step(snapshotChunk("b", "a", 2, newer, 0, data, 40, sum));
      expect(h.snapshots.map((x: Snapshot) => x.meta.index)).toEqual([25]);
    });

    it.each([2, 1])(
      "ignores a snapshot at or below its commit (snapshot index %i) and says where it stands",
      (index) => {
        const s = follower();
        const h = s.step(snapshotChunk("b", "a", 2, { ...meta, index, term: 1 }, 0, data, 40, sum));
        expect(h.snapshots).toEqual([]);
        expect(ofType(h.messages, "snapshot-chunk-response").filter((m) => m.reject)).toEqual([]);
        expect(ofType(h.messages, "append-response")).toMatchObject([{ index: 2, reject: false }]);
        expect(s.terms()).toEqual([1, 1, 2]);
        expect(s.node.status().commit).toBe(2);
      },
    );

    it("a snapshot whose last entry it already holds only fast-forwards the commit", () => {
      const s = new Solo({
        storage: storageWithLog(VOTERS, [1, 1, 1, 1, 1, 1], { term: 1, commit: 2 }),
        applied: 2,
      });
      const h = s.step(
        snapshotChunk("b", "a", 1, { index: 4, term: 1, conf: { voters: VOTERS } }, 0, data, 40, sum),
      );
      expect(h.snapshots).toEqual([]);
      expect(s.node.status()).toMatchObject({ commit: 4, lastIndex: 6 });
      expect(h.committed.map((e) => e.index)).toEqual([3, 4]);
      expect(s.storage.firstIndex()).toBe(1);
    });

    // Regression: the follower used to acknowledge its last index here. AppendResponse.index means "the
    // last index now matching the leader"; after a fast-forward only the snapshot's prefix is known to.
    it("regression: after a fast-forward the follower does not acknowledge its unverified suffix", () => {
      // Entries 5..6 come from a term-2 leader that never committed them; the term-3 leader has others.
      const s = new Solo({ storage: storageWithLog(VOTERS, [1, 1, 1, 1, 2, 2], { term: 2, commit: 2 }) });
      const h = s.step(
        snapshotChunk("b", "a", 3, { index: 4, term: 1, conf: { voters: VOTERS } }, 0, data, 40, sum),
      );
      const ack = ofType(h.messages, "append-response").filter((m) => !m.reject);
      expect(ack).toHaveLength(1);
      expect(ack[0]!.index).toBeLessThanOrEqual(4);
    });
  });

  it("the leader ignores answers about another snapshot and resumes on the right one", () => {
    const { c } = lagging();
    c.heal();
    c.tick("a");
    c.settle();
    // Chunks are flowing or done; a bogus answer about another snapshot changes nothing.
    const before = c.node("a").status().progress.c!;
    c.node("a").step({
      type: "snapshot-chunk-response",
      from: "c",
      to: "a",
      term: 1,
      snapshotIndex: 3,
      snapshotTerm: 1,
      nextOffset: 0,
      reject: true,
    });
    c.node("a").step(appendResponse("c", "a", 1, 0, true, 0, 0));
    expect(c.node("a").status().progress.c!.match).toBe(before.match);
    c.tickAll(3);
    expect(c.node("c").status().commit).toBe(11);
  });
});
