import { crc32c } from "../checksum/crc32c.js";
import { entryTypeCode } from "./entry-type.js";
import type { Entry } from "./types.js";

const header = new Uint8Array(17);
const headerView = new DataView(header.buffer);
const TWO_32 = 0x1_0000_0000;

/**
 * CRC-32C over (index, term, type, data). Index and term are covered so that a row moved to another
 * position, or given another term, fails the check just as flipped data does.
 */
export function entryChecksum(index: number, term: number, typeCode: number, data: Uint8Array): number {
  headerView.setUint32(0, index >>> 0, true);
  headerView.setUint32(4, Math.floor(index / TWO_32), true);
  headerView.setUint32(8, term >>> 0, true);
  headerView.setUint32(12, Math.floor(term / TWO_32), true);
  header[16] = typeCode;
  return crc32c(data, crc32c(header));
}

/*
 * An entry's checksum travels with it: taken once where the entry is first stored (the leader's log
 * append), sent beside it to every follower, checked there on receipt and stored as received. The
 * entry objects are immutable, so the checksum is remembered per object rather than recomputed for
 * each follower it is sent to and again when the follower stores it.
 */
const known = new WeakMap<Entry, number>();

/** The checksum of `entry`, computed once per entry object. */
export function checksumOfEntry(entry: Entry): number {
  let crc = known.get(entry);
  if (crc === undefined) {
    crc = entryChecksum(entry.index, entry.term, entryTypeCode(entry.type), entry.data);
    known.set(entry, crc);
  }
  return crc;
}

/**
 * Whether `crc`, received beside `entry`, is its checksum; if so it is remembered as the entry's, so
 * that storing the entry keeps the checksum it arrived with.
 */
export function acceptEntryChecksum(entry: Entry, crc: number): boolean {
  if (entryChecksum(entry.index, entry.term, entryTypeCode(entry.type), entry.data) !== crc) return false;
  known.set(entry, crc);
  return true;
}
