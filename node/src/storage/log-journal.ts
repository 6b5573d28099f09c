import { randomInt } from "node:crypto";
import { closeSync, fdatasync, fdatasyncSync, fstatSync, openSync, readSync, writeSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { crc32c } from "../checksum/crc32c.js";
import { type FsyncSite, fsyncPath } from "../fs/fsync.js";
import { entryTypeCode, entryTypeOf } from "../raft/entry-type.js";
import type { Entry, HardState } from "../raft/types.js";
import { StorageCorruptionError, StorageFailedError } from "./storage-errors.js";

/** The two journal files, used in turn. */
export const JOURNAL_FILES = ["raft-log.journal-0", "raft-log.journal-1"] as const;

/** One op of a write batch as the journal keeps it: entries to append (replacing any from their first index on) and a hard state. */
export interface JournalOp {
  readonly entries: readonly Entry[];
  readonly hardState: HardState | null;
}

/** One group commit: its sequence number and its ops, in order. */
export interface JournalBatch {
  readonly seq: number;
  readonly ops: readonly JournalOp[];
}

interface ReadRecord extends JournalBatch {
  readonly crc: number;
  readonly prevCrc: number;
}

/**
 * Record header: payload length (0 marks the end), the record's CRC-32C, and the CRC of the record
 * before it. A record's CRC covers its payload seeded with that previous CRC, so a chain only
 * continues through records written one after the other: a stale record of an earlier turn that
 * happens to sit right after the last new one does not follow it.
 */
const HEADER_BYTES = 12;
/**
 * Each write runs on to the next boundary of this many bytes (a page), zero-filled. A write that
 * covers part of a page the page cache has dropped makes the kernel read that page from the disk
 * first, inside the write and so on an acknowledgement's path; the files are reused turn after turn,
 * and a page not written for a minute or so may have been dropped (some hosts reclaim idle page
 * cache). Padded, every page a record starts is written whole; only the page the last record ended
 * in is written in part, and that page was just written.
 */
const PAGE_BYTES = 4096;
/** Larger than any batch the writer makes (a Ready's entries are bounded far below this). */
const MAX_RECORD_BYTES = 1 << 30;

const fdatasyncAsync = promisify(fdatasync);
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

interface JournalFile {
  readonly path: string;
  readonly fd: number;
  /**
   * Every batch this file holds is durable elsewhere (in the log database, fsynced): it may be
   * overwritten from its start.
   */
  free: boolean;
  /** Bumped whenever `free` is set, so that a release arriving late for an earlier state is ignored. */
  generation: number;
  /** Written since its last fdatasync. */
  dirty: boolean;
}

/**
 * The write-ahead journal in front of the log database: every group commit is one checksummed record
 * appended to a preallocated file and made durable by one fdatasync of that file alone, as etcd's WAL
 * is; the database takes the batches in later, in bulk and without an fsync of its own, off the path
 * of an acknowledgement.
 *
 * Two files take turns. Once the one being written passes half its preallocated size, writing moves
 * to the start of the other as soon as that one is free: its batches absorbed into the database and
 * the database's WAL fsynced since (until then the current file just grows). A file's batches form a chain from its start with consecutive sequence numbers; the
 * chain ends at the first record that is torn, fails its checksum or does not follow, which is where
 * the stale tail of an earlier turn begins. Recovery reads both chains and keeps what the database
 * does not already hold.
 */
export class LogJournal {
  private current = 0;
  private position = 0;
  private lastSeq: number | null = null;
  private lastCrc = 0;

  private constructor(
    /** Names both files, for errors. */
    readonly path: string,
    private readonly files: readonly [JournalFile, JournalFile],
    private readonly switchBytes: number,
    private readonly maxRecordBytes: number,
    private readonly chains: readonly ReadRecord[][],
  ) {}

  /**
   * Opens the journal files of `dir`, creating and preallocating them when missing, and reads the
   * chain of batches each holds. Nothing is written until `restart`.
   */
  static open(dir: string, options: { preallocateBytes: number }): LogJournal {
    const opened: JournalFile[] = [];
    try {
      let created = false;
      for (const name of JOURNAL_FILES) {
        const path = join(dir, name);
        let fd: number;
        try {
          fd = openSync(path, "r+");
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
          fd = openSync(path, "w+");
          created = true;
        }
        opened.push({ path, fd, free: true, generation: 0, dirty: false });
        if (fstatSync(fd).size < options.preallocateBytes) preallocate(fd, options.preallocateBytes);
      }
      if (created) fsyncPath(dir);
      const chains = opened.map((f) => readChain(f));
      const files = opened as unknown as [JournalFile, JournalFile];
      const switchBytes = Math.max(1, Math.floor(options.preallocateBytes / 2));
      const maxRecordBytes = Math.min(MAX_RECORD_BYTES, options.preallocateBytes);
      return new LogJournal(join(dir, "raft-log.journal-*"), files, switchBytes, maxRecordBytes, chains);
    } catch (err) {
      for (const f of opened) closeSync(f.fd);
      if (err instanceof StorageCorruptionError) throw err;
      throw new StorageFailedError(`opening the log journal in ${dir} failed: ${String(err)}`, {
        cause: err,
      });
    }
  }

  /**
   * The batches read at open that follow batch `seq`: consecutive sequence numbers from `seq + 1`, each
   * chained to the one before. The first break ends them; it can only be a batch that was never
   * acknowledged (the acknowledgement watermark tells the other case apart).
   */
  batchesAfter(seq: number): JournalBatch[] {
    const all = this.chains.flat().filter((r) => r.seq > seq);
    all.sort((a, b) => a.seq - b.seq);
    const out: ReadRecord[] = [];
    for (const r of all) {
      const prev = out[out.length - 1];
      if (r.seq !== seq + 1 + out.length || (prev !== undefined && r.prevCrc !== prev.crc)) break;
      out.push(r);
    }
    return out;
  }

  /**
   * Ends every chain (zeros over the first header of both files, fsynced) once the database holds
   * everything durably, and seeds the next chain afresh: a batch of an earlier turn, or one past the
   * point recovery stopped at, is never read back. Writing starts over at the beginning of the first
   * file.
   */
  restart(): void {
    for (const f of this.files) {
      writeSync(f.fd, new Uint8Array(HEADER_BYTES), 0, HEADER_BYTES, 0);
      fdatasyncSync(f.fd);
      setFree(f, true);
      f.dirty = false;
    }
    this.current = 0;
    this.position = 0;
    this.lastSeq = null;
    this.lastCrc = randomInt(0x1_0000_0000);
  }

  /**
   * Whether the ops make a record no larger than one journal file (nor than recovery reads back): a
   * larger group goes to the database directly.
   */
  fits(ops: readonly JournalOp[]): boolean {
    return HEADER_BYTES + payloadBytes(ops) <= this.maxRecordBytes;
  }

  /** The file being written is past half its size and the other one is free: the next batch should switch. */
  switchDue(): boolean {
    return this.position >= this.switchBytes && this.files[1 - this.current]!.free;
  }

  /**
   * Moves writing to the start of the other file, which must be free. The file left behind is free
   * once `released` resolves: the caller has absorbed every batch it holds into the database, and
   * `released` is that database's fsync.
   */
  switchFiles(released: Promise<void>): void {
    if (!this.files[1 - this.current]!.free) {
      throw new StorageFailedError("the journal cannot switch to a file whose batches are not yet durable");
    }
    const left = this.files[this.current]!;
    const generation = setFree(left, false);
    released.then(
      () => {
        if (left.generation === generation) setFree(left, true);
      },
      () => undefined,
    );
    this.current = 1 - this.current;
    this.position = 0;
  }

  /**
   * Every batch both files hold is durable in the database (the database took a group commit of its
   * own, which the journal does not chain): a new chain starts at the beginning of the current file.
   */
  releaseAll(): void {
    for (const f of this.files) setFree(f, true);
    this.position = 0;
    this.lastSeq = null;
  }

  /** Appends one batch (page cache only) and returns its bytes; `sync` makes it durable. */
  append(batch: JournalBatch): number {
    if (this.lastSeq !== null && batch.seq !== this.lastSeq + 1) {
      throw new StorageFailedError(`journal batch ${batch.seq} does not follow batch ${this.lastSeq}`);
    }
    const f = this.files[this.current]!;
    if (f.free) setFree(f, false);
    const bytes = HEADER_BYTES + payloadBytes(batch.ops);
    const end = this.position + bytes;
    const padded = Math.ceil(end / PAGE_BYTES) * PAGE_BYTES - this.position;
    const record = encodeRecord(batch, this.lastCrc, bytes, padded);
    try {
      writeAll(f.fd, record, this.position);
    } catch (err) {
      throw new StorageFailedError(`writing ${f.path} failed`, { cause: err });
    }
    f.dirty = true;
    // The next record overwrites the padding: zeros there end the chain until it does.
    this.position = end;
    this.lastSeq = batch.seq;
    this.lastCrc = record.readUInt32LE(4);
    return bytes;
  }

  /**
   * fdatasync of every file written since its last one (two only just after a switch), on the event
   * loop (returning once done) or on the thread pool.
   */
  async sync(site: FsyncSite): Promise<void> {
    for (const f of this.files) {
      if (!f.dirty) continue;
      f.dirty = false;
      try {
        if (site === "event-loop") fdatasyncSync(f.fd);
        else await fdatasyncAsync(f.fd);
      } catch (err) {
        throw new StorageFailedError(`fsync of ${f.path} failed`, { cause: err });
      }
    }
  }

  close(): void {
    for (const f of this.files) closeSync(f.fd);
  }
}

/** Sets `free` and returns the file's new generation. */
function setFree(f: JournalFile, free: boolean): number {
  f.free = free;
  return ++f.generation;
}

/** The chain of batches from the start of one file: consecutive sequence numbers, each record intact. */
function readChain(f: JournalFile): ReadRecord[] {
  const size = fstatSync(f.fd).size;
  const out: ReadRecord[] = [];
  const header = Buffer.alloc(HEADER_BYTES);
  let at = 0;
  while (at + HEADER_BYTES <= size) {
    if (readSync(f.fd, header, 0, HEADER_BYTES, at) !== HEADER_BYTES) break;
    const length = header.readUInt32LE(0);
    if (length === 0 || length > MAX_RECORD_BYTES || at + HEADER_BYTES + length > size) break;
    const payload = Buffer.alloc(length);
    if (readSync(f.fd, payload, 0, length, at + HEADER_BYTES) !== length) break;
    const crc = header.readUInt32LE(4);
    const prevCrc = header.readUInt32LE(8);
    if (crc32c(payload, prevCrc) !== crc) break;
    const batch = decodePayload(f.path, payload);
    const prev = out[out.length - 1];
    if (prev !== undefined && (batch.seq !== prev.seq + 1 || prevCrc !== prev.crc)) break;
    out.push({ ...batch, crc, prevCrc });
    at += HEADER_BYTES + length;
  }
  return out;
}

/*
 * Payload: seq (f64), op count (u32), then per op: hard state flag (u8) [term f64, commit f64,
 * vote length u16 (0xffff for none), vote bytes], entry count (u32), then per entry: index f64,
 * term f64, kind u8, data length u32, data.
 */
function payloadBytes(ops: readonly JournalOp[]): number {
  let size = 8 + 4;
  for (const op of ops) {
    size += 1 + 4;
    const hs = op.hardState;
    if (hs) size += 16 + 2 + (hs.vote == null ? 0 : Buffer.byteLength(hs.vote, "utf8"));
    for (const e of op.entries) size += 8 + 8 + 1 + 4 + e.data.byteLength;
  }
  return size;
}

/** The record (`bytes` long) followed by zeros up to `padded` bytes. */
function encodeRecord(batch: JournalBatch, prevCrc: number, bytes: number, padded: number): Buffer {
  const buf = Buffer.allocUnsafe(padded);
  buf.fill(0, bytes);
  let at = HEADER_BYTES;
  at = buf.writeDoubleLE(batch.seq, at);
  at = buf.writeUInt32LE(batch.ops.length, at);
  batch.ops.forEach((op) => {
    const hs = op.hardState;
    at = buf.writeUInt8(hs ? 1 : 0, at);
    if (hs) {
      at = buf.writeDoubleLE(hs.term, at);
      at = buf.writeDoubleLE(hs.commit, at);
      const vote = hs.vote == null ? null : encoder.encode(hs.vote);
      at = buf.writeUInt16LE(vote === null ? 0xffff : vote.byteLength, at);
      if (vote !== null) {
        buf.set(vote, at);
        at += vote.byteLength;
      }
    }
    at = buf.writeUInt32LE(op.entries.length, at);
    for (const e of op.entries) {
      at = buf.writeDoubleLE(e.index, at);
      at = buf.writeDoubleLE(e.term, at);
      at = buf.writeUInt8(entryTypeCode(e.type), at);
      at = buf.writeUInt32LE(e.data.byteLength, at);
      buf.set(e.data, at);
      at += e.data.byteLength;
    }
  });
  const payload = buf.subarray(HEADER_BYTES, bytes);
  buf.writeUInt32LE(payload.byteLength, 0);
  buf.writeUInt32LE(crc32c(payload, prevCrc), 4);
  buf.writeUInt32LE(prevCrc, 8);
  return buf;
}

/** A record whose checksum holds but whose contents do not parse was written wrong: corruption. */
function decodePayload(path: string, p: Buffer): JournalBatch {
  const bad = (what: string): StorageCorruptionError =>
    new StorageCorruptionError(path, null, `journal record with a valid checksum is malformed: ${what}`);
  let at = 0;
  const need = (n: number): void => {
    if (at + n > p.byteLength) throw bad("it ends early");
  };
  need(12);
  const seq = p.readDoubleLE(at);
  const opCount = p.readUInt32LE(at + 8);
  at += 12;
  const ops: JournalOp[] = [];
  for (let i = 0; i < opCount; i++) {
    need(1);
    const hasHard = p.readUInt8(at);
    at += 1;
    let hardState: HardState | null = null;
    if (hasHard === 1) {
      need(18);
      const term = p.readDoubleLE(at);
      const commit = p.readDoubleLE(at + 8);
      const voteLength = p.readUInt16LE(at + 16);
      at += 18;
      let vote: string | null = null;
      if (voteLength !== 0xffff) {
        need(voteLength);
        try {
          vote = decoder.decode(p.subarray(at, at + voteLength));
        } catch {
          throw bad("a vote is not UTF-8");
        }
        at += voteLength;
      }
      hardState = { term, vote, commit };
    } else if (hasHard !== 0) {
      throw bad(`hard state flag ${hasHard}`);
    }
    need(4);
    const entryCount = p.readUInt32LE(at);
    at += 4;
    const entries: Entry[] = [];
    for (let k = 0; k < entryCount; k++) {
      need(21);
      const index = p.readDoubleLE(at);
      const term = p.readDoubleLE(at + 8);
      const type = entryTypeOf(p.readUInt8(at + 16));
      const length = p.readUInt32LE(at + 17);
      at += 21;
      if (type === null) throw bad(`entry ${index} has an unknown type`);
      need(length);
      // A copy: the record's buffer is dropped once read, and entries outlive it in the database.
      entries.push({ index, term, type, data: new Uint8Array(p.subarray(at, at + length)) });
      at += length;
    }
    ops.push({ entries, hardState });
  }
  if (at !== p.byteLength) throw bad("bytes follow its last op");
  return { seq, ops };
}

function writeAll(fd: number, data: Uint8Array, position: number): void {
  let done = 0;
  while (done < data.byteLength) {
    done += writeSync(fd, data, done, data.byteLength - done, position + done);
  }
}

/**
 * Zeros up to `bytes`, so that appends overwrite allocated blocks: an fdatasync after growing a file
 * must also commit its new size through the filesystem journal, which makes it dearer
 * (docs/decisions/0006-log-journal.md).
 */
function preallocate(fd: number, bytes: number): void {
  const zeros = new Uint8Array(1024 * 1024);
  for (let at = fstatSync(fd).size; at < bytes; at += zeros.length) {
    writeSync(fd, zeros, 0, Math.min(zeros.length, bytes - at), at);
  }
  fdatasyncSync(fd);
}
