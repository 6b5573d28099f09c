import { crc32c } from "./crc32c.js";

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
