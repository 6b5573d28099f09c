import type { Lane } from "@keyload/contract";
import { type DiskFloorLimit, DiskFloorRefusal } from "./disk-floor-refusal.js";

/**
 * How the voter's free disk stands: `ok`; `soft`, below the soft floor, where data commands are
 * refused and control work goes on; `hard`, below the hard floor, where every client write is refused.
 */
export type DiskState = "ok" | "soft" | "hard";

export interface DiskFloorSettings {
  /** Free bytes below which data commands are refused; 0: the compaction reserve plus `marginBytes`. */
  readonly softFloorBytes: number;
  readonly marginBytes: number;
  /** Free bytes below which every client write is refused. */
  readonly hardFloorBytes: number;
  /** How often the free space is measured: a refused caller is told to wait that long. */
  readonly probeIntervalMs: number;
}

/** One measurement of the data directory's filesystem. */
export interface DiskReading {
  /** Bytes this process may still write there. */
  readonly freeBytes: number;
  /** The compaction reserve: what one more snapshot of the current state takes. */
  readonly reserveBytes: number;
}

/** `disk` of the admission status; the measured fields are null until the first measurement. */
export interface DiskFloorStatus {
  readonly freeBytes: number | null;
  readonly reserveBytes: number | null;
  readonly softFloorBytes: number;
  readonly hardFloorBytes: number;
  readonly state: DiskState;
}

/**
 * The disk floor of command admission: from the last measurement of the data directory's free space,
 * whether a command of each lane is admitted. A voter that cannot take one more snapshot cannot
 * compact its log, and the log then grows until the disk is full and the voter fail-stops; refusing
 * new data work first leaves the room for that snapshot and for the control work (acks, deliveries,
 * membership) that lets clients drain what is queued. It is local admission, like the lanes' limits:
 * Raft's own appends and applies are never refused, so every voter applies the same entries.
 *
 * The refusals are built when a measurement changes them, so a flood refused below a floor allocates
 * nothing per command.
 */
export class DiskFloor {
  private reading: DiskReading | null = null;
  private softFloor: number;
  private current: DiskState = "ok";
  private dataRefusal: DiskFloorRefusal | undefined;
  private controlRefusal: DiskFloorRefusal | undefined;

  constructor(readonly settings: DiskFloorSettings) {
    this.softFloor = this.softFloorFor(0);
  }

  get state(): DiskState {
    return this.current;
  }

  /** Takes a measurement in; returns the state it leaves. */
  update(reading: DiskReading): DiskState {
    this.reading = reading;
    this.softFloor = this.softFloorFor(reading.reserveBytes);
    const { freeBytes } = reading;
    const hardFloor = this.settings.hardFloorBytes;
    this.current = freeBytes < hardFloor ? "hard" : freeBytes < this.softFloor ? "soft" : "ok";
    const refuse = (lane: Lane, limit: DiskFloorLimit, floor: number) =>
      new DiskFloorRefusal(lane, limit, floor, freeBytes, Math.ceil(this.settings.probeIntervalMs / 1000));
    if (this.current === "hard") {
      this.dataRefusal = refuse("data", "HardFloorBytes", hardFloor);
      this.controlRefusal = refuse("control", "HardFloorBytes", hardFloor);
    } else {
      this.dataRefusal =
        this.current === "soft" ? refuse("data", "SoftFloorBytes", this.softFloor) : undefined;
      this.controlRefusal = undefined;
    }
    return this.current;
  }

  /** Why a command of `lane` is refused now, or undefined when the disk admits it. */
  refusal(lane: Lane): DiskFloorRefusal | undefined {
    return lane === "control" ? this.controlRefusal : this.dataRefusal;
  }

  status(): DiskFloorStatus {
    return {
      freeBytes: this.reading?.freeBytes ?? null,
      reserveBytes: this.reading?.reserveBytes ?? null,
      softFloorBytes: this.softFloor,
      hardFloorBytes: this.settings.hardFloorBytes,
      state: this.current,
    };
  }

  /** Never under the hard floor: between the two, data work stops before control work does. */
  private softFloorFor(reserveBytes: number): number {
    const { softFloorBytes, marginBytes, hardFloorBytes } = this.settings;
    const soft = softFloorBytes > 0 ? softFloorBytes : reserveBytes + marginBytes;
    return Math.max(soft, hardFloorBytes);
  }
}
