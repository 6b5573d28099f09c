import type { EntryType } from "../raft/types.js";
import { crc32c } from "./crc32c.js";

/** How an entry type is stored: a small integer, so a renamed type never changes the bytes on disk. */
const TYPE_CODES: Readonly<Record<EntryType, number>> = { normal: 0, noop: 1 };
const TYPES_BY_CODE: readonly EntryType[] = ["normal", "noop"];

export function entryTypeCode(type: EntryType): number {
  return TYPE_CODES[type];
}

export function isEntryType(type: unknown): type is EntryType {
  return type === "normal" || type === "noop";
}

/** The entry type stored as `code`, or null when the code is unknown (a damaged row). */
export function entryTypeOf(code: number): EntryType | null {
  return TYPES_BY_CODE[code] ?? null;
}

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
