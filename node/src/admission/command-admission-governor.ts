import type { Lane } from "@keyload/contract";
import type { AdmissionRefusal } from "./admission-refusal.js";
import {
  type CommandAdmissionLimits,
  type CommandAdmissionLimitsView,
  type CommandAdmissionOptions,
  commandAdmissionLimitsView,
  resolveCommandAdmissionOptions,
} from "./command-admission-options.js";
import { CommandLane, type CommandLaneUsage } from "./command-lane.js";
import type { CommandReservation } from "./command-reservation.js";
import type { DiskFloor } from "./disk-floor.js";
import type { PayloadSize } from "./payload-accounting.js";

export interface CommandAdmissionRequest {
  readonly lane: Lane;
  /** Tenant and principal from the verified principal catalog, never from the request body. */
  readonly tenantId: string;
  readonly principalId: string;
  /** The sizes of the request body as received; an empty body is a zero-length payload. */
  readonly payload: PayloadSize;
}

export interface CommandScopeStatus {
  readonly lane: Lane;
  readonly tenantId: string;
  readonly principalId: string;
  readonly tenantCommands: number;
  readonly principalCommands: number;
}

/** `commandAdmission` of the admission status (contract section 7). */
export interface CommandAdmissionStatus {
  readonly limits: CommandAdmissionLimitsView;
  readonly data: CommandLaneUsage;
  readonly control: CommandLaneUsage;
  readonly verifiedScopes: CommandScopeStatus[];
}

/**
 * Bounds the count and retained bytes of a voter's queued and active commands, per lane, per tenant
 * and per verified principal. The control lane is an independent reserve, so acknowledgements,
 * deliveries, membership and dispatch keep flowing while the data lane is full. A disk floor, when
 * given, refuses commands first while the data directory's free space is below it.
 */
export class CommandAdmissionGovernor {
  readonly limits: CommandAdmissionLimits;
  private readonly data: CommandLane;
  private readonly control: CommandLane;

  constructor(
    options?: CommandAdmissionOptions,
    private readonly disk?: DiskFloor,
  ) {
    this.limits = resolveCommandAdmissionOptions(options);
    this.data = new CommandLane("data", this.limits);
    this.control = new CommandLane("control", this.limits);
  }

  /**
   * Admits a command or says why not. A refusal is returned, not thrown: it happens before the
   * command ID is taken or anything is appended, so the caller may retry with the same ID.
   */
  tryAdmit(request: CommandAdmissionRequest): CommandReservation | AdmissionRefusal {
    const floor = this.disk?.refusal(request.lane);
    if (floor !== undefined) return floor;
    const lane = request.lane === "control" ? this.control : this.data;
    return lane.tryAdmit(request.tenantId, request.principalId, request.payload);
  }

  usage(lane: Lane): CommandLaneUsage {
    return (lane === "control" ? this.control : this.data).usage();
  }

  status(): CommandAdmissionStatus {
    const verifiedScopes: CommandScopeStatus[] = [];
    for (const lane of [this.data, this.control]) {
      for (const scope of lane.scopes.entries()) {
        verifiedScopes.push({
          lane: lane.lane,
          tenantId: scope.tenantId,
          principalId: scope.principalId,
          tenantCommands: scope.tenantCount,
          principalCommands: scope.principalCount,
        });
      }
    }
    return {
      limits: commandAdmissionLimitsView(this.limits),
      data: this.data.usage(),
      control: this.control.usage(),
      verifiedScopes,
    };
  }
}
