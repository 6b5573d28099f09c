import type { Lane, ResourceExhaustedDetails } from "@keyload/contract";
import { AdmissionRefusal } from "./admission-refusal.js";

/** Which floor refused: the soft one holds back data commands, the hard one every client write. */
export type DiskFloorLimit = "SoftFloorBytes" | "HardFloorBytes";

/**
 * A command refused because the voter's free disk is below a floor (`DiskFloor`). Its details name the
 * floor and the free bytes measured rather than a count in use: nothing the voter holds is released by
 * waiting, only space coming back, and that is measured once per probe interval.
 */
export class DiskFloorRefusal extends AdmissionRefusal {
  constructor(
    lane: Lane,
    limit: DiskFloorLimit,
    floorBytes: number,
    readonly freeBytes: number,
    private readonly waitSeconds: number,
  ) {
    super("DiskFloor", "command", lane, limit, floorBytes, floorBytes, freeBytes);
  }

  override get details(): ResourceExhaustedDetails {
    return {
      governor: "command",
      lane: this.lane,
      limit: this.limit,
      limitValue: this.limitValue,
      freeBytes: this.freeBytes,
    };
  }

  override get message(): string {
    return (
      `command admission refused on the ${this.lane} lane (DiskFloor): ${this.freeBytes} bytes are ` +
      `free on the data directory's filesystem, below ${this.limit} ${this.limitValue}`
    );
  }

  protected override get retryAfterSeconds(): number {
    return this.waitSeconds;
  }
}
