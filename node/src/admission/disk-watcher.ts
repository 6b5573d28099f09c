import { statfs } from "node:fs/promises";
import type { Logger } from "pino";
import type { DiskFloor, DiskState } from "./disk-floor.js";

/** The bytes this process may still write on the filesystem that holds `dir`. */
export type FreeSpaceProbe = (dir: string) => Promise<number>;

/** statfs(2)'s blocks available to an unprivileged writer, as `df` shows them. */
export async function statfsFreeBytes(dir: string): Promise<number> {
  const stats = await statfs(dir);
  return stats.bavail * stats.bsize;
}

export interface DiskWatcherOptions {
  readonly dir: string;
  readonly floor: DiskFloor;
  /** What one more snapshot of the current state takes (the compaction reserve). */
  readonly reserveBytes: () => Promise<number>;
  readonly freeSpace?: FreeSpaceProbe;
  readonly logger: Logger;
}

/**
 * Measures the data directory's free space every `probeIntervalMs` of the floor's settings, off the
 * path of any request: admission reads only the floor's last state. A measurement that fails leaves
 * the last one in force (a disk that really fails makes the voter's storage fail-stop on its own).
 */
export class DiskWatcher {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private failing = false;
  private readonly freeSpace: FreeSpaceProbe;

  constructor(private readonly options: DiskWatcherOptions) {
    this.freeSpace = options.freeSpace ?? statfsFreeBytes;
  }

  /** Measures once, so that admission starts from a real reading, then keeps measuring. */
  async start(): Promise<void> {
    await this.measure();
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  /** One measurement, taken into the floor; logs when the state changes. */
  async measure(): Promise<void> {
    const { dir, floor, logger } = this.options;
    let reading: { freeBytes: number; reserveBytes: number };
    try {
      const [freeBytes, reserveBytes] = await Promise.all([this.freeSpace(dir), this.options.reserveBytes()]);
      reading = { freeBytes, reserveBytes };
    } catch (err) {
      if (!this.failing) logger.warn({ err, dir }, "measuring the data directory's free space failed");
      this.failing = true;
      return;
    }
    this.failing = false;
    const before = floor.state;
    const after: DiskState = floor.update(reading);
    if (after === before) return;
    const status = floor.status();
    if (after === "ok") logger.info({ disk: status }, "free disk space is above its floors again");
    else if (after === "soft")
      logger.warn({ disk: status }, "free disk space is below the soft floor: data commands are refused");
    else
      logger.error(
        { disk: status },
        "free disk space is below the hard floor: every client write is refused",
      );
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.measure().finally(() => this.schedule());
    }, this.options.floor.settings.probeIntervalMs);
    // Measuring never keeps the process alive.
    this.timer.unref();
  }
}
