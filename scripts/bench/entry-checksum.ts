/**
 * Entry checksum throughput: `entryChecksum` (CRC-32C over an entry's position and data, taken on the
 * leader's append and again by every follower on receipt) over entries of several sizes, beside
 * zlib's native CRC-32 over the same bytes as the scale of what native code does. Prints MB/s and the
 * ratio of the two per size.
 *
 *   pnpm --filter @keyload/scripts bench:checksum [--seconds S per size]
 */

import { parseArgs } from "node:util";
import { crc32 } from "node:zlib";
import { entryChecksum } from "@keyload/node/raft";
import { scriptArgs } from "./script-args.js";

export interface ChecksumBenchRow {
  readonly bytes: number;
  readonly entryChecksumMBps: number;
  readonly nativeCrc32MBps: number;
}

/** Bytes per second of `checksum` over `data`, run in batches for about `seconds`. */
function throughput(data: Uint8Array, seconds: number, checksum: (d: Uint8Array) => number): number {
  const batch = Math.max(1, Math.floor((1 << 20) / data.length));
  let sink = 0;
  for (let i = 0; i < batch * 4; i++) sink ^= checksum(data);
  let done = 0;
  const started = performance.now();
  while (performance.now() - started < seconds * 1000) {
    for (let i = 0; i < batch; i++) sink ^= checksum(data);
    done += batch;
  }
  const elapsed = (performance.now() - started) / 1000;
  if (sink === 0.5) console.log(sink); // keeps the calls from being dropped as dead code
  return (done * data.length) / elapsed;
}

export function runChecksumBench(sizes: readonly number[], seconds: number): ChecksumBenchRow[] {
  return sizes.map((bytes) => {
    // One byte in, so that the data does not start on an aligned boundary (a received entry rarely does).
    const data = new Uint8Array(bytes + 1).subarray(1);
    for (let i = 0; i < bytes; i++) data[i] = (i * 31 + 7) & 0xff;
    return {
      bytes,
      entryChecksumMBps: throughput(data, seconds, (d) => entryChecksum(123_456, 7, 0, d)) / 1e6,
      nativeCrc32MBps: throughput(data, seconds, (d) => crc32(d)) / 1e6,
    };
  });
}

export function formatChecksumBench(rows: readonly ChecksumBenchRow[]): string {
  return [
    "entry-checksum: MB/s of entryChecksum (CRC-32C in JavaScript) and of zlib's native CRC-32",
    ...rows.map(
      (r) =>
        `  ${String(r.bytes).padStart(6)} B  entryChecksum ${r.entryChecksumMBps.toFixed(0).padStart(5)}` +
        `  native crc32 ${r.nativeCrc32MBps.toFixed(0).padStart(5)}` +
        `  ratio ${(r.entryChecksumMBps / r.nativeCrc32MBps).toFixed(2)}`,
    ),
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    args: scriptArgs(),
    options: { seconds: { type: "string", default: "1" } },
  });
  console.log(formatChecksumBench(runChecksumBench([64, 1024, 65536], Number(values.seconds))));
}
