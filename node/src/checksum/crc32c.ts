/**
 * CRC-32C (Castagnoli), table-driven with slicing-by-16 so that checksumming every entry on the
 * append path, again on receipt, and the whole log at open stays well below the cost of the I/O it
 * guards (docs/benchmarks.md, "Entry checksums").
 * Castagnoli rather than the zlib polynomial: better error detection on the message sizes we store.
 */

const POLY = 0x82f63b78;
const SLICES = 16;

/** Sixteen 256-entry tables, table k advancing the CRC over k more zero bytes than table 0. */
const TABLES = buildTables();

function buildTables(): Uint32Array {
  const t = new Uint32Array(SLICES * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[n] = c >>> 0;
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n]!;
    for (let k = 1; k < SLICES; k++) {
      c = t[c & 0xff]! ^ (c >>> 8);
      t[k * 256 + n] = c >>> 0;
    }
  }
  return t;
}

/**
 * The CRC-32C of `data`; pass the CRC of the preceding bytes as `previous` to checksum a sequence of
 * pieces as if they were one buffer.
 */
export function crc32c(data: Uint8Array, previous = 0): number {
  const t = TABLES;
  let c = ~previous >>> 0;
  let i = 0;
  const n = data.length;
  const end = n - (n % SLICES);
  for (; i < end; i += SLICES) {
    const a = (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24)) ^ c;
    c =
      t[15 * 256 + (a & 0xff)]! ^
      t[14 * 256 + ((a >>> 8) & 0xff)]! ^
      t[13 * 256 + ((a >>> 16) & 0xff)]! ^
      t[12 * 256 + (a >>> 24)]! ^
      t[11 * 256 + data[i + 4]!]! ^
      t[10 * 256 + data[i + 5]!]! ^
      t[9 * 256 + data[i + 6]!]! ^
      t[8 * 256 + data[i + 7]!]! ^
      t[7 * 256 + data[i + 8]!]! ^
      t[6 * 256 + data[i + 9]!]! ^
      t[5 * 256 + data[i + 10]!]! ^
      t[4 * 256 + data[i + 11]!]! ^
      t[3 * 256 + data[i + 12]!]! ^
      t[2 * 256 + data[i + 13]!]! ^
      t[256 + data[i + 14]!]! ^
      t[data[i + 15]!]!;
  }
  for (; i < n; i++) c = t[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
