import { acceptEntryChecksum, checksumOfEntry } from "../raft/entry-checksum.js";
import { entryTypeCode, entryTypeOf } from "../raft/entry-type.js";
import {
  type ConfState,
  type Entry,
  type EntryType,
  MAX_TERM,
  type Message,
  type SnapshotMeta,
} from "../raft/types.js";
import { BinaryReader } from "./binary-reader.js";
import { BinaryWriter } from "./binary-writer.js";
import { isMemberId } from "./member-name.js";
import { PeerProtocolError } from "./peer-errors.js";
import { quoted } from "./quoted.js";

/*
 * Layout: a tag byte for the message type, then `from`, `to` and `term`, then the type's own fields in
 * declaration order. Numbers are varints, booleans one byte, strings and byte fields length-prefixed.
 * Entry and snapshot data are copied once into the output and decoded as views into the input, which
 * keeps a 64-entry append at well under a microsecond per entry each way. A snapshot chunk goes out
 * only with its bytes (the sending driver fills them in); its length is that of its bytes.
 *
 * Every number is a non-negative safe integer (BinaryReader.uint). Beyond that the decoder refuses
 * what no correct leader sends and the core would choke on, since what the core throws on fail-stops
 * the voter: appends whose entries do not follow their anchor, or whose terms cannot be those of a
 * log, and snapshot metadata no snapshot can have.
 */

const TAG = {
  append: 1,
  "append-response": 2,
  vote: 3,
  "pre-vote": 4,
  "vote-response": 5,
  "pre-vote-response": 6,
  heartbeat: 7,
  "heartbeat-response": 8,
  "snapshot-chunk": 9,
  "snapshot-chunk-response": 10,
  "read-index": 11,
  "read-index-response": 12,
  "timeout-now": 13,
} as const satisfies Record<Message["type"], number>;

/** Room for the header and fixed fields of any message with short ids; the writer grows if needed. */
const FIXED_ESTIMATE = 96;
/** term, index (up to 8 bytes each), type, a length prefix of up to 8 bytes and the checksum. */
const ENTRY_OVERHEAD = 29;
/** The smallest possible encoded entry: one-byte term, index, type and zero length, and the checksum. */
const MIN_ENTRY_BYTES = 8;

export function encodeRaftMessage(message: Message): Uint8Array {
  const parts = encodeRaftMessageParts(message);
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/**
 * The encoding in parts to write one after the other: a snapshot chunk's bytes apart from the fields
 * before them, so that they are sent as read, never copied; any other message in one part.
 */
export function encodeRaftMessageParts(message: Message): readonly Uint8Array[] {
  if (message.type === "snapshot-chunk") {
    const data = chunkBytes(message.data, message.length);
    const w = new BinaryWriter(FIXED_ESTIMATE * 2);
    w.u8(TAG[message.type]);
    w.string(message.from);
    w.string(message.to);
    w.uint(message.term);
    writeSnapshotMeta(w, message.meta);
    w.uint(message.offset);
    w.uint(message.totalBytes);
    w.uint(message.checksum);
    w.uint(message.epoch);
    w.uint(data.length);
    return [w.finish(), data];
  }
  const w = new BinaryWriter(estimateSize(message));
  w.u8(TAG[message.type]);
  w.string(message.from);
  w.string(message.to);
  w.uint(message.term);
  switch (message.type) {
    case "append":
      w.uint(message.index);
      w.uint(message.logTerm);
      w.uint(message.entries.length);
      for (const entry of message.entries) writeEntry(w, entry);
      w.uint(message.commit);
      w.uint(message.epoch);
      break;
    case "append-response":
      w.uint(message.index);
      w.bool(message.reject);
      w.uint(message.rejectHint);
      w.uint(message.logTerm);
      w.uint(message.epoch);
      break;
    case "vote":
    case "pre-vote":
      w.uint(message.index);
      w.uint(message.logTerm);
      w.bool(message.transfer);
      w.uint(message.confIndex);
      break;
    case "vote-response":
    case "pre-vote-response":
      w.bool(message.reject);
      break;
    case "heartbeat":
      w.uint(message.commit);
      w.uint(message.readRound);
      break;
    case "heartbeat-response":
      w.uint(message.readRound);
      w.bool(message.unchecked);
      break;
    case "snapshot-chunk-response":
      w.uint(message.snapshotIndex);
      w.uint(message.snapshotTerm);
      w.uint(message.nextOffset);
      w.bool(message.reject);
      break;
    case "read-index":
      w.string(message.requestId);
      break;
    case "read-index-response":
      w.string(message.requestId);
      w.uint(message.index);
      w.bool(message.reject);
      break;
    case "timeout-now":
      break;
  }
  return [w.finish()];
}

/**
 * Decodes one message, or throws PeerProtocolError: unknown tags, out-of-range values, truncation and
 * trailing bytes are all refused, so no partially decoded message ever escapes.
 */
export function decodeRaftMessage(bytes: Uint8Array): Message {
  const r = new BinaryReader(bytes);
  const tag = r.u8();
  const from = r.string();
  const to = r.string();
  const term = r.uint();
  if (term > MAX_TERM) throw new PeerProtocolError(`term ${term} is beyond the highest a message may carry`);
  let message: Message;
  switch (tag) {
    case TAG.append: {
      const index = r.uint();
      const logTerm = r.uint();
      if (logTerm > term) throw beyondTerm(`the anchor's term ${logTerm}`, term);
      const count = r.count(MIN_ENTRY_BYTES);
      const entries: Entry[] = [];
      let previousTerm = logTerm;
      for (let i = 0; i < count; i++) {
        const entry = readEntry(r);
        checkLogEntry(entry, index + 1 + i, previousTerm, term);
        previousTerm = entry.term;
        entries.push(entry);
      }
      const commit = r.uint();
      const epoch = r.uint();
      message = { type: "append", from, to, term, index, logTerm, entries, commit, epoch };
      break;
    }
    case TAG["append-response"]: {
      const index = r.uint();
      const reject = r.bool();
      const rejectHint = r.uint();
      const logTerm = r.uint();
      const epoch = r.uint();
      message = { type: "append-response", from, to, term, index, reject, rejectHint, logTerm, epoch };
      break;
    }
    case TAG.vote:
    case TAG["pre-vote"]: {
      const type = tag === TAG.vote ? "vote" : "pre-vote";
      const index = r.uint();
      const logTerm = r.uint();
      const transfer = r.bool();
      const confIndex = r.uint();
      message = { type, from, to, term, index, logTerm, transfer, confIndex };
      break;
    }
    case TAG["vote-response"]:
    case TAG["pre-vote-response"]: {
      const type = tag === TAG["vote-response"] ? "vote-response" : "pre-vote-response";
      message = { type, from, to, term, reject: r.bool() };
      break;
    }
    case TAG.heartbeat: {
      const commit = r.uint();
      const readRound = r.uint();
      message = { type: "heartbeat", from, to, term, commit, readRound };
      break;
    }
    case TAG["heartbeat-response"]:
      message = { type: "heartbeat-response", from, to, term, readRound: r.uint(), unchecked: r.bool() };
      break;
    case TAG["snapshot-chunk"]: {
      const meta = readSnapshotMeta(r, term);
      const offset = r.uint();
      const totalBytes = r.uint();
      const checksum = r.uint();
      const epoch = r.uint();
      const data = r.bytes();
      if (checksum > 0xffff_ffff) throw new PeerProtocolError(`snapshot checksum ${checksum} is not 32 bits`);
      if (offset + data.byteLength > totalBytes) {
        throw new PeerProtocolError(
          `snapshot chunk ends at ${offset + data.byteLength}, beyond the snapshot's ${totalBytes} bytes`,
        );
      }
      message = {
        type: "snapshot-chunk",
        from,
        to,
        term,
        meta,
        offset,
        length: data.byteLength,
        totalBytes,
        checksum,
        data,
        epoch,
      };
      break;
    }
    case TAG["snapshot-chunk-response"]: {
      const snapshotIndex = r.uint();
      const snapshotTerm = r.uint();
      const nextOffset = r.uint();
      const reject = r.bool();
      message = {
        type: "snapshot-chunk-response",
        from,
        to,
        term,
        snapshotIndex,
        snapshotTerm,
        nextOffset,
        reject,
      };
      break;
    }
    case TAG["read-index"]:
      message = { type: "read-index", from, to, term, requestId: r.string() };
      break;
    case TAG["read-index-response"]: {
      const requestId = r.string();
      const index = r.uint();
      const reject = r.bool();
      message = { type: "read-index-response", from, to, term, requestId, index, reject };
      break;
    }
    case TAG["timeout-now"]:
      message = { type: "timeout-now", from, to, term };
      break;
    default:
      throw new PeerProtocolError(`unknown Raft message tag ${tag}`);
  }
  r.end();
  return message;
}

function estimateSize(message: Message): number {
  if (message.type === "append") {
    let size = FIXED_ESTIMATE;
    for (const entry of message.entries) size += ENTRY_OVERHEAD + entry.data.length;
    return size;
  }
  return FIXED_ESTIMATE;
}

function chunkBytes(data: Uint8Array | null, length: number): Uint8Array {
  if (data === null || data.byteLength !== length) {
    throw new PeerProtocolError(
      `a snapshot chunk of ${length} bytes is sent with ${data === null ? "none" : data.byteLength} of them`,
    );
  }
  return data;
}

function writeEntry(w: BinaryWriter, entry: Entry): void {
  w.uint(entry.term);
  w.uint(entry.index);
  w.u8(entryTypeCode(entry.type));
  w.bytes(entry.data);
  w.u32(checksumOfEntry(entry));
}

/** An entry whose bytes do not match the checksum it came with is refused, never stored. */
function readEntry(r: BinaryReader): Entry {
  const term = r.uint();
  const index = r.uint();
  const type = readEntryType(r.u8());
  const data = r.bytes();
  const entry: Entry = { term, index, type, data };
  if (!acceptEntryChecksum(entry, r.u32())) {
    throw new PeerProtocolError(`entry ${index} does not match the checksum it was sent with`);
  }
  return entry;
}

/**
 * An entry of an append is the one at `expectedIndex` (the anchor's index plus its position), of a
 * term from 1 to the message's, no older than the one before it: terms never decrease along a log.
 */
function checkLogEntry(entry: Entry, expectedIndex: number, previousTerm: number, term: number): void {
  if (entry.index !== expectedIndex) {
    throw new PeerProtocolError(`entry ${entry.index} does not follow entry ${expectedIndex - 1}`);
  }
  if (entry.term === 0) throw new PeerProtocolError(`entry ${entry.index} has term 0`);
  if (entry.term > term) throw beyondTerm(`entry ${entry.index}'s term ${entry.term}`, term);
  if (entry.term < previousTerm) {
    throw new PeerProtocolError(
      `entry ${entry.index}'s term ${entry.term} decreases from ${previousTerm} before it`,
    );
  }
}

function beyondTerm(what: string, term: number): PeerProtocolError {
  return new PeerProtocolError(`${what} is beyond the message's term ${term}`);
}

function readEntryType(byte: number): EntryType {
  const type = entryTypeOf(byte);
  if (type === null) throw new PeerProtocolError(`unknown entry type ${byte}`);
  return type;
}

function writeSnapshotMeta(w: BinaryWriter, meta: SnapshotMeta): void {
  w.uint(meta.index);
  w.uint(meta.term);
  writeNames(w, meta.conf.voters);
  writeNames(w, meta.conf.learners ?? []);
}

function writeNames(w: BinaryWriter, names: readonly string[]): void {
  w.uint(names.length);
  for (const name of names) w.string(name);
}

function readNames(r: BinaryReader): string[] {
  const count = r.count(1);
  const names: string[] = [];
  for (let i = 0; i < count; i++) names.push(r.string());
  return names;
}

/**
 * A snapshot covers at least entry 1, was taken at a term from 1 to the sender's, and names at least
 * one voter and each member once, by a valid member ID: the snapshot store and the core throw on
 * anything else.
 */
function readSnapshotMeta(r: BinaryReader, messageTerm: number): SnapshotMeta {
  const index = r.uint();
  const term = r.uint();
  if (index === 0) throw new PeerProtocolError("a snapshot at index 0");
  if (term === 0) throw new PeerProtocolError(`the snapshot at ${index} has term 0`);
  if (term > messageTerm) throw beyondTerm(`the snapshot's term ${term}`, messageTerm);
  const voters = readNames(r);
  const learners = readNames(r);
  if (voters.length === 0) throw new PeerProtocolError(`the snapshot at ${index} names no voters`);
  const members = new Set<string>();
  for (const member of [...voters, ...learners]) {
    if (!isMemberId(member))
      throw new PeerProtocolError(`snapshot member ${quoted(member)} is not a member ID`);
    if (members.has(member)) throw new PeerProtocolError(`the snapshot names member ${quoted(member)} twice`);
    members.add(member);
  }
  const conf: ConfState = learners.length === 0 ? { voters } : { voters, learners };
  return { index, term, conf };
}
