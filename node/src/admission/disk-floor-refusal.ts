import type { Lane, ResourceExhaustedDetails } from "@keyload/contract";
import { AdmissionRefusal } from "./admission-refusal.js";

/** Which floor refused: the soft one holds back data commands, the hard one every client write. */
export type DiskFloorLimit = "SoftFloorBytes" | "HardFloorBytes";

/**
 * A command refused because the voter's free disk is below a floor. Its details name the floor and the
 * free bytes measured rather than a count in use: nothing the voter holds is released by waiting, only
 * space coming back, and that is measured once per probe interval. A data command's reason is
 * `DiskFloor` below either floor; a control command, which the contract admits below `DiskFloor`, is
 * refused only below the hard floor, as `DiskHardFloor`.
 */
export class DiskFloorRefusal extends AdmissionRefusal {
  constructor(
    lane: Lane,
    limit: DiskFloorLimit,
    floorBytes: number,
    readonly freeBytes: number,
    private readonly waitSeconds: number,
  ) {
    const reason = lane === "control" ? "DiskHardFloor" : "DiskFloor";
    super(reason, "command", lane, limit, floorBytes, floorBytes, freeBytes);
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
      `command admission refused on the ${this.lane} lane (${this.reason}): ${this.freeBytes} bytes are ` +
      `free on the data directory's filesystem, below ${this.limit} ${this.limitValue}`
    );
  }

  protected override get retryAfterSeconds(): number {
    return this.waitSeconds;
  }
}
