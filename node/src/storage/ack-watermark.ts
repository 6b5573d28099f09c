import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { crc32c } from "../checksum/crc32c.js";
import { fsyncPath } from "../fs/fsync.js";
import { StorageCorruptionError } from "./storage-errors.js";

const MAGIC = 0x4b4c_4157; // "KLAW"
const VERSION = 1;
const SIZE = 32;

export interface Watermark {
  /** The write sequence number of the last batch acknowledged as durable. */
  readonly seq: number;
  /** The log's last index when it was acknowledged (for the error message only). */
  readonly lastIndex: number;
}

/**
 * A 32-byte side file recording the last write batch acknowledged as durable. SQLite alone cannot
 * tell a write-ahead log that lost committed frames (truncated, or garbled so its checksum chain
 * breaks early) from one that simply ends there: it silently opens the older state. The database
 * stores the sequence number of every batch; if it opens behind this watermark, acknowledged writes
 * are gone and the store refuses to open.
 *
 * The watermark is written after each fsync (in the next turn of the event loop, once the
 * acknowledgements that fsync released have left) but not fsynced itself, so it costs one small
 * pwrite per batch, off the acknowledgement's path, and never another fsync. After a power loss it may lag the database (never lead it, as it is
 * only written once the batch it names is durable), which only weakens the check for that window.
 */
export class AckWatermark {
  private readonly buf = new Uint8Array(SIZE);
  private readonly view = new DataView(this.buf.buffer);

  private constructor(
    readonly path: string,
    private readonly fd: number,
  ) {}

  /** Reads the watermark at `path`, or null when there is none. */
  static read(path: string): Watermark | null {
    if (!existsSync(path)) return null;
    const bytes = readFileSync(path);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (bytes.byteLength !== SIZE || view.getUint32(0, true) !== MAGIC) {
      throw new StorageCorruptionError(path, null, "not a KeyLoad acknowledgement watermark");
    }
    if (view.getUint32(28, true) !== crc32c(bytes.subarray(0, 28))) {
      throw new StorageCorruptionError(path, null, "the acknowledgement watermark fails its checksum");
    }
    if (view.getUint32(4, true) !== VERSION) {
      throw new StorageCorruptionError(path, null, `unknown watermark version ${view.getUint32(4, true)}`);
    }
    return { seq: view.getFloat64(8, true), lastIndex: view.getFloat64(16, true) };
  }

  /**
   * Opens the watermark for writing and sets it to `current` (what is durable now). A missing file is
   * created durably, so that its absence later means it was deleted: written and fsynced under a
   * temporary name, then renamed into place, so a crash midway leaves no file rather than an empty one
   * that no later open would accept.
   */
  static open(path: string, current: Watermark): AckWatermark {
    const created = !existsSync(path);
    if (created) {
      const staging = `${path}.creating`;
      const fd = openSync(staging, "w");
      try {
        new AckWatermark(staging, fd).write(current);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(staging, path);
      fsyncPath(dirname(path));
    }
    const mark = new AckWatermark(path, openSync(path, "r+"));
    if (!created) mark.write(current);
    return mark;
  }

  write(mark: Watermark): void {
    const v = this.view;
    v.setUint32(0, MAGIC, true);
    v.setUint32(4, VERSION, true);
    v.setFloat64(8, mark.seq, true);
    v.setFloat64(16, mark.lastIndex, true);
    v.setUint32(24, 0, true);
    v.setUint32(28, crc32c(this.buf.subarray(0, 28)), true);
    writeSync(this.fd, this.buf, 0, SIZE, 0);
  }

  close(): void {
    closeSync(this.fd);
  }
}
