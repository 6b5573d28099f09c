import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { crc32c } from "../checksum/crc32c.js";
import { decodeRaftMessage, encodeRaftMessage } from "../peer/raft-message-codec.js";
import { RaftNode } from "../raft/raft-node.js";
import { SeededRandom } from "../raft/seeded-random.js";
import { SnapshotInbox } from "../raft/snapshot-inbox.js";
import type { Message, NodeId, SnapshotChunkMessage } from "../raft/types.js";
import type { DurableLogStore } from "../storage/durable-log-store.js";
import type { DurableLogWriter } from "../storage/durable-log-writer.js";
import { SNAPSHOT_DIR } from "../storage/log-recovery.js";
import { SnapshotReader } from "../storage/snapshot-reader.js";
import { CONF, dataFor, entries, hs, storageFixture } from "../storage/test-fixtures/storage-fixture.js";
import { FileSnapshotSink } from "./file-snapshot-sink.js";
import { sendOnceWritten } from "./snapshot-chunk-acks.js";
import { SnapshotSender } from "./snapshot-sender.js";

const fx = storageFixture();
const CHUNK = 16 * 1024;
const WINDOW = 3;
const SNAPSHOT_BYTES = 200_000;
const SNAP_INDEX = 30;
const SNAP_DATA = dataFor(SNAP_INDEX, 1, SNAPSHOT_BYTES);

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * One voter's Raft side as the driver runs it, over real storage: Readys persisted through the writer
 * (a received snapshot sealed first), chunks sent through SnapshotSender and received through
 * SnapshotInbox into a temporary file. Messages cross through the peer wire codec.
 */
class Peer {
  readonly node: RaftNode;
  readonly inbox: SnapshotInbox<FileSnapshotSink>;
  readonly sender: SnapshotSender;
  private busy = false;
  failure: unknown = null;
  /** What the receiving side failed with, as the driver would fail-stop on it. */
  receiveFailure: unknown = null;

  constructor(
    readonly id: NodeId,
    readonly writer: DurableLogWriter<DurableLogStore>,
    private readonly wire: (m: Message) => void,
  ) {
    const store = writer.store;
    this.node = new RaftNode({
      id,
      storage: store,
      random: new SeededRandom(id === "n1" ? 1 : 2),
      applied: store.snapshotIndex(),
      electionTicks: 10,
      heartbeatTicks: 1,
      snapshotChunkBytes: CHUNK,
      maxInflightSnapshotChunks: WINDOW,
    });
    this.inbox = new SnapshotInbox((s) => new FileSnapshotSink(store.snapshotFiles.receive(s.meta, s.size)));
    this.sender = new SnapshotSender(store, wire, (err) => {
      this.failure = err;
    });
  }

  get store(): DurableLogStore {
    return this.writer.store;
  }

  step(m: Message): void {
    this.inbox.step(this.node, m);
  }

  /** Handles every pending Ready in order, as the driver's loop does. */
  async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      while (this.node.hasReady()) {
        const rd = this.node.ready();
        const snapshot = rd.snapshot ? await this.inbox.take(rd.snapshot).seal(rd.snapshot.checksum) : null;
        if (snapshot || rd.entries.length > 0 || rd.hardState) {
          await this.writer.write({ snapshot, entries: rd.entries, hardState: rd.hardState });
        }
        for (const m of rd.messages) {
          if (m.type === "snapshot-chunk") this.sender.send(m);
          else
            sendOnceWritten(this.inbox, m, this.wire, (err) => {
              this.receiveFailure = err;
            });
        }
        this.node.advance();
      }
    } finally {
      this.busy = false;
    }
  }
}

interface Pair {
  readonly leader: Peer;
  follower: Peer;
  /** Puts a message on the wire. */
  readonly send: (m: Message) => void;
  /** Every chunk as it crossed the wire to the follower, with its bytes. */
  chunks: SnapshotChunkMessage[];
  /** Replaces a message on its way (return null to lose it). */
  tamper: (m: Message) => Message | null;
  run(until: () => boolean, maxRounds?: number): Promise<void>;
}

/**
 * n1 holds entries 1..40, a snapshot at 30 of SNAPSHOT_BYTES and a log compacted behind it; n2 is empty.
 * n3 never runs. n1 campaigns and, finding n2 behind its log, sends it the snapshot.
 */
async function pair(followerDir = fx.dir()): Promise<Pair> {
  const leaderWriter = fx.openWriter(fx.dir());
  await leaderWriter.write({ snapshot: null, entries: entries(1, 40, 1, 64), hardState: hs(1, null, 40) });
  await leaderWriter.createSnapshot(
    {
      async createSnapshotFile(path) {
        writeFileSync(path, SNAP_DATA);
        return { index: SNAP_INDEX, term: 1 };
      },
      durablePosition: async () => ({ index: SNAP_INDEX, term: 1 }),
    },
    () => CONF,
  );
  leaderWriter.store.compact(SNAP_INDEX);
  const followerWriter = fx.openWriter(followerDir);
  const queue: Message[] = [];
  const send = (m: Message): void => {
    queue.push(m);
  };
  const p: Pair = {
    chunks: [],
    tamper: (m) => m,
    send,
    leader: new Peer("n1", leaderWriter, send),
    follower: new Peer("n2", followerWriter, send),
    async run(until, maxRounds = 2000) {
      for (let round = 0; round < maxRounds && !until(); round++) {
        if (round % 20 === 19) p.leader.node.tick();
        await p.leader.pump();
        await p.follower.pump();
        // The chunks the leader handed its sender are read and on the wire.
        await p.leader.sender.settled();
        for (const m of queue.splice(0)) {
          const target = m.to === "n1" ? p.leader : m.to === "n2" ? p.follower : null;
          if (target === null) continue;
          const crossed = p.tamper(decodeRaftMessage(encodeRaftMessage(m)));
          if (crossed === null) continue;
          if (crossed.type === "snapshot-chunk" && crossed.to === "n2") p.chunks.push(crossed);
          target.step(crossed);
        }
        expect(p.leader.failure).toBeNull();
      }
      expect(until()).toBe(true);
    },
  };
  p.leader.node.campaign();
  return p;
}

const installed = (p: Pair) => (): boolean => p.follower.store.snapshotIndex() === SNAP_INDEX;

function snapshotDirOf(store: DurableLogStore): string[] {
  return readdirSync(join(store.dir, SNAPSHOT_DIR));
}

describe("a snapshot streamed from a leader to a follower over real storage", () => {
  it("crosses in chunks read from the leader's file and written to the follower's temporary file", async () => {
    const reads: number[] = [];
    const readChunk = SnapshotReader.prototype.readChunk;
    vi.spyOn(SnapshotReader.prototype, "readChunk").mockImplementation(function (
      this: SnapshotReader,
      offset: number,
      length: number,
    ) {
      reads.push(length);
      return readChunk.call(this, offset, length);
    });
    const p = await pair();
    const temps: number[] = [];
    const tamper = p.tamper;
    p.tamper = (m) => {
      if (m.type === "snapshot-chunk" && m.offset > 0) {
        // While chunks arrive, the bytes so far sit in a temporary file, and no snapshot is visible.
        const files = snapshotDirOf(p.follower.store);
        expect(files.filter((f) => f.startsWith("snap-"))).toEqual([]);
        const temp = files.find((f) => f.endsWith(".part"));
        if (temp) temps.push(statSync(join(p.follower.store.dir, SNAPSHOT_DIR, temp)).size);
      }
      return tamper(m);
    };
    await p.run(installed(p));

    const chunkCount = Math.ceil(SNAPSHOT_BYTES / CHUNK);
    expect(new Set(p.chunks.map((m) => m.offset))).toEqual(
      new Set(Array.from({ length: chunkCount }, (_, i) => i * CHUNK)),
    );
    // No read, message or write ever held more than one chunk of it.
    expect(reads.length).toBeGreaterThanOrEqual(chunkCount);
    expect(Math.max(...reads)).toBe(CHUNK);
    for (const m of p.chunks) expect(m.data!.byteLength).toBeLessThanOrEqual(CHUNK);
    expect(temps.length).toBeGreaterThan(2);
    expect(Math.max(...temps)).toBeLessThan(SNAPSHOT_BYTES);

    const f = p.follower.store;
    expect(f.snapshot()).toEqual(p.leader.store.snapshot());
    expect(f.snapshot()).toMatchObject({ size: SNAPSHOT_BYTES, checksum: crc32c(SNAP_DATA) });
    expect(new Uint8Array(readFileSync(f.verifiedSnapshotPath()!))).toEqual(SNAP_DATA);
    expect(snapshotDirOf(f)).toHaveLength(1);
    // Then the log after the snapshot, by appends.
    await p.run(() => f.lastIndex() === 41);
    expect(p.leader.node.status().progress.n2?.state).toBe("replicate");
  });

  it("acknowledges a chunk once its bytes are in the file: a slow disk holds the sender to its window", async () => {
    const p = await pair();
    let release!: () => void;
    const disk = new Promise<void>((resolve) => {
      release = resolve;
    });
    const files = p.follower.store.snapshotFiles;
    const receive = files.receive.bind(files);
    vi.spyOn(files, "receive").mockImplementation((meta, size) => {
      const receiver = receive(meta, size);
      const write = receiver.write.bind(receiver);
      // The bytes go to the file, but no write completes until the disk catches up.
      receiver.write = (offset, data) => {
        const done = write(offset, data);
        return disk.then(() => done);
      };
      return receiver;
    });
    let rounds = 0;
    await p.run(() => ++rounds > 300);
    // Unacknowledged, the leader sent no chunk past its window; before, each chunk was acknowledged as
    // soon as it was queued, and the whole snapshot waited in the follower's memory.
    expect(p.chunks.length).toBeGreaterThan(0);
    expect(Math.max(...p.chunks.map((m) => m.offset))).toBeLessThan(WINDOW * CHUNK);
    release();
    await p.run(installed(p));
    expect(new Uint8Array(readFileSync(p.follower.store.verifiedSnapshotPath()!))).toEqual(SNAP_DATA);
  });

  it("a chunk that cannot be written fails the follower at once rather than stalling the transfer", async () => {
    const p = await pair();
    const files = p.follower.store.snapshotFiles;
    const receive = files.receive.bind(files);
    vi.spyOn(files, "receive").mockImplementation((meta, size) => {
      const receiver = receive(meta, size);
      const write = receiver.write.bind(receiver);
      // From the second chunk on the disk is full: that write fails, and every one after it, as in the
      // receiver's own chain of writes.
      let full: Error | null = null;
      receiver.write = (offset, data) => {
        if (offset === CHUNK) full = Object.assign(new Error("no space left on device"), { code: "ENOSPC" });
        const done = write(offset, data);
        const failure = full;
        return failure === null ? done : done.then(() => Promise.reject(failure));
      };
      return receiver;
    });
    // Before, the chunk was never acknowledged, the leader resent its window forever, and nothing failed.
    await p.run(() => p.follower.receiveFailure !== null, 500);
    expect(p.follower.receiveFailure).toMatchObject({ code: "ENOSPC" });
    expect(p.follower.store.snapshotIndex()).not.toBe(SNAP_INDEX);
  });

  it("the sender reuses a chunk's buffer only once the transport released it", async () => {
    const p = await pair();
    const store = p.leader.store;
    const snap = store.snapshot()!;
    const chunk = (i: number): SnapshotChunkMessage => ({
      type: "snapshot-chunk",
      from: "n1",
      to: "n2",
      term: 1,
      meta: snap.meta,
      offset: i * CHUNK,
      length: Math.min(CHUNK, snap.size - i * CHUNK),
      totalBytes: snap.size,
      checksum: snap.checksum,
      data: null,
      epoch: 0,
    });
    const held: { m: SnapshotChunkMessage; released: () => void }[] = [];
    const sender = new SnapshotSender(
      store,
      (m, released) => held.push({ m, released }),
      (err) => {
        throw err;
      },
    );
    for (const i of [0, 1, 2]) sender.send(chunk(i));
    await sender.settled();
    const buffers = held.map((h) => h.m.data!.buffer);
    expect(new Set(buffers).size).toBe(3);
    held[1]!.released();
    sender.send(chunk(3));
    await sender.settled();
    expect(held[3]!.m.data!.buffer).toBe(buffers[1]);
    // Every chunk handed out holds its own bytes, the unreleased ones untouched by the reuse.
    for (const [i, h] of held.entries()) {
      if (i === 1) continue;
      expect(Buffer.from(h.m.data!).equals(SNAP_DATA.subarray(i * CHUNK, (i + 1) * CHUNK))).toBe(true);
    }
    await sender.closeAll();
  });

  it("refuses a chunk corrupted on the way, and installs only the intact snapshot sent again", async () => {
    const p = await pair();
    let corrupted = 0;
    p.tamper = (m) => {
      if (m.type !== "snapshot-chunk" || m.offset !== 5 * CHUNK || corrupted > 0) return m;
      corrupted++;
      const data = m.data!.slice();
      data[100] = data[100]! ^ 0x01;
      return { ...m, data };
    };
    let refusedWhileEmpty = false;
    await p.run(() => {
      if (p.follower.inbox.refusedSnapshots > 0 && p.follower.store.snapshotIndex() === 0) {
        refusedWhileEmpty = true;
      }
      return installed(p)();
    });
    expect(corrupted).toBe(1);
    expect(p.follower.inbox.refusedSnapshots).toBe(1);
    expect(refusedWhileEmpty).toBe(true);
    // Sent again from the start after the refusal.
    expect(p.chunks.filter((m) => m.offset === 0).length).toBeGreaterThanOrEqual(2);
    expect(new Uint8Array(readFileSync(p.follower.store.verifiedSnapshotPath()!))).toEqual(SNAP_DATA);
    // The refused copy's temporary file goes in the background.
    await vi.waitFor(() => expect(snapshotDirOf(p.follower.store)).toHaveLength(1));
  });

  it("a follower that crashes mid-receive keeps nothing visible, and gets the whole snapshot after it restarts", async () => {
    const followerDir = fx.dir();
    const p = await pair(followerDir);
    const tamper = p.tamper;
    let crashed = false;
    p.tamper = (m) => (crashed ? null : tamper(m));
    await p.run(() => p.chunks.length >= 6);
    crashed = true;
    // Let the chunks already handed to the temporary file reach it, as the page cache would.
    await vi.waitFor(() =>
      expect(snapshotDirOf(p.follower.store).some((f) => f.endsWith(".part"))).toBe(true),
    );
    await p.follower.inbox
      .sinkInUse()
      ?.written()
      .catch(() => undefined);
    const leftover = snapshotDirOf(p.follower.store);
    expect(leftover.some((f) => f.startsWith("snap-"))).toBe(false);
    // The process dies: nothing aborts the receive; the store is closed as the kernel would.
    await p.follower.writer.close();

    const reopened = fx.openWriter(followerDir);
    expect(reopened.store.snapshotIndex()).toBe(0);
    expect(reopened.store.lastIndex()).toBe(0);
    expect(snapshotDirOf(reopened.store)).toEqual([]);

    const follower = new Peer("n2", reopened, p.send);
    p.follower = follower;
    const before = p.chunks.length;
    p.tamper = tamper;
    await p.run(installed(p));
    expect(follower.store.snapshotIndex()).toBe(SNAP_INDEX);
    // The restarted follower asked to start over: the transfer began again at 0.
    expect(p.chunks.slice(before).some((m) => m.offset === 0)).toBe(true);
    expect(new Uint8Array(readFileSync(follower.store.verifiedSnapshotPath()!))).toEqual(SNAP_DATA);
    expect(snapshotDirOf(follower.store)).toHaveLength(1);
  });
});
