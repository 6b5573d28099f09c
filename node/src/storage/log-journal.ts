import { randomInt } from "node:crypto";
import {
  closeSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  openSync,
  readSync,
  writeSync,
  writevSync,
} from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { crc32c } from "../checksum/crc32c.js";
import { type FsyncSite, fsyncPath } from "../fs/fsync.js";
import { acceptEntryChecksum, checksumOfEntry } from "../raft/entry-checksum.js";
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
 * before it. A record's CRC is seeded with that previous CRC, so a chain only continues through records
 * written one after the other: a stale record of an earlier turn that happens to sit right after the
 * last new one does not follow it.
 */
const HEADER_BYTES = 12;
/**
 * Set in the length word of a record whose entries carry their own checksums (the ones they travel
 * and are stored with, raft/entry-checksum.ts): the record's CRC then covers everything but the entries'
 * data, which each entry's checksum covers, so the data is neither checksummed twice nor copied into
 * the record. A record without it (as earlier builds wrote) has one CRC over its whole payload.
 */
const ENTRY_CHECKSUMS = 0x8000_0000;
/**
 * Set in the length word of a record written once the record before it in the file was durable (its
 * fdatasync had returned): no crash can have torn that one then. Recovery reads a record that fails
 * its check, followed by an intact one with this set that chains to it, as corruption of data already
 * on the disk, not as a torn tail, and refuses to go on rather than drop acknowledged batches. The
 * record's CRC is seeded with the flag too (PREV_DURABLE_SEED), so a flipped bit cannot set it.
 */
const PREV_DURABLE = 0x4000_0000;
const PREV_DURABLE_SEED = 0x9e37_79b9;
/** The length bits of the length word. */
const LENGTH_BITS = 0x3fff_ffff;
/** Entry data at least this long is written from its own buffer rather than copied into the record's. */
const INLINE_DATA_BYTES = 4096;
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
const MAX_RECORD_BYTES = LENGTH_BITS;

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
  /** The last batch an fdatasync covered; null before any, or once a new chain starts. */
  private syncedSeq: number | null = null;

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
    // The record before it is in this file (not at its start) and an fdatasync covered it.
    const prevDurable = this.position > 0 && this.lastSeq !== null && this.syncedSeq === this.lastSeq;
    const record = encodeRecord(batch, this.lastCrc, bytes, padded, prevDurable);
    try {
      writeAll(f.fd, record.chunks, this.position);
    } catch (err) {
      throw new StorageFailedError(`writing ${f.path} failed`, { cause: err });
    }
    f.dirty = true;
    // The next record overwrites the padding: zeros there end the chain until it does.
    this.position = end;
    this.lastSeq = batch.seq;
    this.lastCrc = record.crc;
    return bytes;
  }

  /**
   * fdatasync of every file written since its last one (two only just after a switch), on the event
   * loop (returning once done) or on the thread pool.
   */
  async sync(site: FsyncSite): Promise<void> {
    const through = this.lastSeq;
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
    if (through !== null && this.lastSeq !== null && through <= this.lastSeq) this.syncedSeq = through;
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
  let at = 0;
  for (;;) {
    const read = readRecord(f, at, size);
    if (read === null) break;
    const { header, length, batch } = read;
    const crc = header.readUInt32LE(4);
    const prevCrc = header.readUInt32LE(8);
    if (batch === null) {
      // Only past a good record of this chain: the successor's sequence number then tells it from a
      // stale record of an earlier turn of this file, whose place a torn write may have half-covered.
      const prev = out[out.length - 1];
      if (prev !== undefined && durablyFollowed(f, at + HEADER_BYTES + length, size, crc, prev.seq + 2)) {
        throw new StorageCorruptionError(
          f.path,
          null,
          `the journal record at byte ${at} is damaged, yet the record after it was written once it was durable`,
        );
      }
      break;
    }
    const prev = out[out.length - 1];
    if (prev !== undefined && (batch.seq !== prev.seq + 1 || prevCrc !== prev.crc)) break;
    out.push({ ...batch, crc, prevCrc });
    at += HEADER_BYTES + length;
  }
  return out;
}

/**
 * The record at `at`: its header, its length and its batch, null when it fails its check; null
 * altogether where no record can start (zeros, a length past the file, a short read).
 */
function readRecord(
  f: JournalFile,
  at: number,
  size: number,
): { header: Buffer; length: number; batch: JournalBatch | null } | null {
  if (at + HEADER_BYTES > size) return null;
  const header = Buffer.alloc(HEADER_BYTES);
  if (readSync(f.fd, header, 0, HEADER_BYTES, at) !== HEADER_BYTES) return null;
  const word = header.readUInt32LE(0);
  const length = word & LENGTH_BITS;
  if (length === 0 || at + HEADER_BYTES + length > size) return null;
  const payload = Buffer.alloc(length);
  if (readSync(f.fd, payload, 0, length, at + HEADER_BYTES) !== length) return null;
  const crc = header.readUInt32LE(4);
  const seed = recordSeed(header.readUInt32LE(8), (word & PREV_DURABLE) !== 0);
  const batch =
    (word & ENTRY_CHECKSUMS) !== 0
      ? readChecksummedPayload(f.path, payload, seed, crc)
      : crc32c(payload, seed) === crc
        ? decodePayload(f.path, payload)
        : null;
  return { header, length, batch };
}

/**
 * Whether the record at `at` is intact, is batch `seq`, chains to a record whose CRC was `crc`, and was
 * written once that one was durable (PREV_DURABLE).
 */
function durablyFollowed(f: JournalFile, at: number, size: number, crc: number, seq: number): boolean {
  const next = readRecord(f, at, size);
  if (next === null || next.batch === null || next.batch.seq !== seq) return false;
  return (next.header.readUInt32LE(0) & PREV_DURABLE) !== 0 && next.header.readUInt32LE(8) === crc;
}

/** A record's CRC seed: the CRC of the record before it, and whether that one was durable. */
function recordSeed(prevCrc: number, prevDurable: boolean): number {
  return prevDurable ? (prevCrc ^ PREV_DURABLE_SEED) >>> 0 : prevCrc;
}

/*
 * Payload: seq (f64), op count (u32), then per op: hard state flag (u8) [term f64, commit f64,
 * vote length u16 (0xffff for none), vote bytes], entry count (u32), then per entry: index f64,
 * term f64, kind u8, data length u32, [with ENTRY_CHECKSUMS: the entry's checksum u32,] data.
 */
const ENTRY_HEADER_BYTES = 8 + 8 + 1 + 4 + 4;

function payloadBytes(ops: readonly JournalOp[]): number {
  let size = 8 + 4;
  for (const op of ops) {
    size += 1 + 4;
    const hs = op.hardState;
    if (hs) size += 16 + 2 + (hs.vote == null ? 0 : Buffer.byteLength(hs.vote, "utf8"));
    for (const e of op.entries) size += ENTRY_HEADER_BYTES + e.data.byteLength;
  }
  return size;
}

interface EncodedRecord {
  /** The record (`bytes` long, then zeros up to `padded`), in pieces to write one after the other. */
  readonly chunks: readonly Uint8Array[];
  readonly crc: number;
}

/**
 * The record with ENTRY_CHECKSUMS. Small entries' data is copied into the record's buffer; larger data
 * is written from the entry's own, which no one changes (entries are immutable).
 */
function encodeRecord(
  batch: JournalBatch,
  prevCrc: number,
  bytes: number,
  padded: number,
  prevDurable: boolean,
): EncodedRecord {
  let own = padded;
  for (const op of batch.ops) {
    for (const e of op.entries) if (e.data.byteLength >= INLINE_DATA_BYTES) own -= e.data.byteLength;
  }
  const buf = Buffer.allocUnsafe(own);
  const chunks: Uint8Array[] = [];
  let chunkStart = 0;
  let at = HEADER_BYTES;
  // The CRC runs over everything but the entries' data: `covered` is where it has reached in `buf`.
  let crc = recordSeed(prevCrc, prevDurable);
  let covered = HEADER_BYTES;
  at = buf.writeDoubleLE(batch.seq, at);
  at = buf.writeUInt32LE(batch.ops.length, at);
  for (const op of batch.ops) {
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
      at = buf.writeUInt32LE(checksumOfEntry(e), at);
      crc = crc32c(buf.subarray(covered, at), crc);
      if (e.data.byteLength >= INLINE_DATA_BYTES) {
        chunks.push(buf.subarray(chunkStart, at), e.data);
        chunkStart = at;
      } else {
        buf.set(e.data, at);
        at += e.data.byteLength;
      }
      covered = at;
    }
  }
  crc = crc32c(buf.subarray(covered, at), crc);
  buf.fill(0, at);
  chunks.push(buf.subarray(chunkStart));
  buf.writeUInt32LE(((bytes - HEADER_BYTES) | ENTRY_CHECKSUMS | (prevDurable ? PREV_DURABLE : 0)) >>> 0, 0);
  buf.writeUInt32LE(crc, 4);
  buf.writeUInt32LE(prevCrc, 8);
  return { chunks, crc };
}

/** A payload's ops as read, before any check; `crc` covers all but the entries' data, seeded as asked. */
interface ParsedPayload {
  readonly seq: number;
  readonly ops: readonly {
    readonly hardState: HardState | null;
    readonly entries: readonly {
      index: number;
      term: number;
      type: number;
      /** Null in a record without ENTRY_CHECKSUMS. */
      crc: number | null;
      data: Uint8Array;
    }[];
  }[];
  readonly crc: number;
}

/**
 * Parses a payload; with `withChecksums` each entry carries its checksum and the CRC of everything but
 * the entries' data is computed on the way. Returns what is wrong instead when the bytes do not parse.
 */
function parsePayload(p: Buffer, withChecksums: boolean, seed: number): ParsedPayload | string {
  let at = 0;
  let crc = seed;
  let covered = 0;
  const fits = (n: number): boolean => at + n <= p.byteLength;
  if (!fits(12)) return "it ends early";
  const seq = p.readDoubleLE(at);
  const opCount = p.readUInt32LE(at + 8);
  at += 12;
  const ops: ParsedPayload["ops"][number][] = [];
  for (let i = 0; i < opCount; i++) {
    if (!fits(1)) return "it ends early";
    const hasHard = p.readUInt8(at);
    at += 1;
    let hardState: HardState | null = null;
    if (hasHard === 1) {
      if (!fits(18)) return "it ends early";
      const term = p.readDoubleLE(at);
      const commit = p.readDoubleLE(at + 8);
      const voteLength = p.readUInt16LE(at + 16);
      at += 18;
      let vote: string | null = null;
      if (voteLength !== 0xffff) {
        if (!fits(voteLength)) return "it ends early";
        try {
          vote = decoder.decode(p.subarray(at, at + voteLength));
        } catch {
          return "a vote is not UTF-8";
        }
        at += voteLength;
      }
      hardState = { term, vote, commit };
    } else if (hasHard !== 0) {
      return `hard state flag ${hasHard}`;
    }
    if (!fits(4)) return "it ends early";
    const entryCount = p.readUInt32LE(at);
    at += 4;
    const entries: ParsedPayload["ops"][number]["entries"][number][] = [];
    const headerBytes = withChecksums ? ENTRY_HEADER_BYTES : ENTRY_HEADER_BYTES - 4;
    for (let k = 0; k < entryCount; k++) {
      if (!fits(headerBytes)) return "it ends early";
      const index = p.readDoubleLE(at);
      const term = p.readDoubleLE(at + 8);
      const type = p.readUInt8(at + 16);
      const length = p.readUInt32LE(at + 17);
      const entryCrc = withChecksums ? p.readUInt32LE(at + 21) : null;
      at += headerBytes;
      if (!fits(length)) return "it ends early";
      if (withChecksums) crc = crc32c(p.subarray(covered, at), crc);
      entries.push({ index, term, type, crc: entryCrc, data: p.subarray(at, at + length) });
      at += length;
      covered = at;
    }
    ops.push({ hardState, entries });
  }
  // Bytes after the last op are covered too, so that a record whose checksum holds has none.
  if (withChecksums) crc = crc32c(p.subarray(covered), crc);
  if (at !== p.byteLength) return "bytes follow its last op";
  return { seq, ops, crc };
}

/**
 * The batch of a record written without ENTRY_CHECKSUMS, whose CRC over the whole payload held: bytes
 * that do not parse were written wrong, which is corruption.
 */
function decodePayload(path: string, p: Buffer): JournalBatch {
  const parsed = parsePayload(p, false, 0);
  if (typeof parsed === "string") throw malformedRecord(path, parsed);
  return toBatch(path, parsed).batch;
}

/**
 * The batch of a record written with ENTRY_CHECKSUMS, or null where the chain ends: the record does not
 * parse, its CRC fails, or an entry's data fails the entry's checksum (a torn or garbled record). Only
 * a record that passes every check and still holds nonsense is corruption.
 */
function readChecksummedPayload(path: string, p: Buffer, prevCrc: number, crc: number): JournalBatch | null {
  const parsed = parsePayload(p, true, prevCrc);
  if (typeof parsed === "string" || parsed.crc !== crc) return null;
  const { batch, dataIntact } = toBatch(path, parsed);
  return dataIntact ? batch : null;
}

/** The entries of `parsed`; `dataIntact` tells whether each one's data matches the checksum it carries. */
function toBatch(path: string, parsed: ParsedPayload): { batch: JournalBatch; dataIntact: boolean } {
  let dataIntact = true;
  const ops = parsed.ops.map((op) => ({
    hardState: op.hardState,
    entries: op.entries.map((e): Entry => {
      const type = entryTypeOf(e.type);
      if (type === null) throw malformedRecord(path, `entry ${e.index} has an unknown type`);
      // A copy: the record's buffer is dropped once read, and entries outlive it in the database.
      const entry: Entry = { index: e.index, term: e.term, type, data: new Uint8Array(e.data) };
      if (e.crc !== null && !acceptEntryChecksum(entry, e.crc)) dataIntact = false;
      return entry;
    }),
  }));
  return { batch: { seq: parsed.seq, ops }, dataIntact };
}

function malformedRecord(path: string, what: string): StorageCorruptionError {
  return new StorageCorruptionError(path, null, `journal record with a valid checksum is malformed: ${what}`);
}

/** Writes `chunks` one after the other from `position`, as few system calls as the kernel allows. */
function writeAll(fd: number, chunks: readonly Uint8Array[], position: number): void {
  let pending = [...chunks];
  let at = position;
  while (pending.length > 0) {
    let written = writevSync(fd, pending, at);
    at += written;
    let done = 0;
    while (done < pending.length && written >= pending[done]!.byteLength) {
      written -= pending[done]!.byteLength;
      done++;
    }
    pending = pending.slice(done);
    if (written > 0) pending[0] = pending[0]!.subarray(written);
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
