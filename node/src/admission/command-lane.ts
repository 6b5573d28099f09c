import type { Lane } from "@keyload/contract";
import { type NamedLimit, namedLimit } from "./admission-property.js";
import { AdmissionRefusal } from "./admission-refusal.js";
import type { CommandAdmissionLimits, CommandAdmissionProperty } from "./command-admission-options.js";
import { CommandReservation } from "./command-reservation.js";
import { type PayloadSize, retainedBytes } from "./payload-accounting.js";
import { type ScopeCaps, ScopeRefusal, VerifiedScopes } from "./verified-scopes.js";

type LaneLimit = NamedLimit<CommandAdmissionProperty>;
const limit = namedLimit<CommandAdmissionProperty>;

export interface CommandLaneUsage {
  readonly commands: number;
  readonly retainedBytes: number;
  readonly queued: number;
  readonly active: number;
}

/** The counters of one command lane; CommandAdmissionGovernor owns one per lane. */
export class CommandLane {
  readonly scopes = new VerifiedScopes();
  private queued = 0;
  private active = 0;
  private retainedBytes = 0;
  private readonly maxCommands: LaneLimit;
  private readonly maxRetainedBytes: LaneLimit;
  private readonly scopeCaps: ScopeCaps<LaneLimit>;
  /** Only the control lane caps a single payload. */
  private readonly maxPayloadBytes: LaneLimit | undefined;

  constructor(
    readonly lane: Lane,
    limits: CommandAdmissionLimits,
  ) {
    if (lane === "control") {
      this.maxCommands = limit(limits, "ControlMaxCommands");
      this.maxRetainedBytes = limit(limits, "ControlMaxRetainedBytes");
      this.scopeCaps = {
        tenant: limit(limits, "ControlMaxCommandsPerTenant"),
        principal: limit(limits, "ControlMaxCommandsPerPrincipal"),
      };
      this.maxPayloadBytes = limit(limits, "ControlMaxPayloadBytes");
    } else {
      this.maxCommands = limit(limits, "MaxCommands");
      this.maxRetainedBytes = limit(limits, "MaxRetainedBytes");
      this.scopeCaps = {
        tenant: limit(limits, "MaxCommandsPerTenant"),
        principal: limit(limits, "MaxCommandsPerPrincipal"),
      };
      this.maxPayloadBytes = undefined;
    }
  }

  /**
   * Checks the payload size (control), then count, bytes, tenant, principal: the lane-wide checks come
   * first because they need no map lookup, and nothing is counted until every check has passed.
   */
  tryAdmit(
    tenantId: string,
    principalId: string,
    payload: PayloadSize,
  ): CommandReservation | AdmissionRefusal {
    const cap = this.maxPayloadBytes;
    if (cap !== undefined && payload.utf8Length > cap.value) {
      return this.refuse("ControlPayloadTooLarge", cap, payload.utf8Length, 0);
    }
    const commands = this.queued + this.active;
    if (commands >= this.maxCommands.value) return this.refuse("CommandCount", this.maxCommands, 1, commands);
    const bytes = retainedBytes(payload);
    if (this.retainedBytes + bytes > this.maxRetainedBytes.value)
      return this.refuse("CommandBytes", this.maxRetainedBytes, bytes, this.retainedBytes);
    const scope = this.scopes.tryAcquire(tenantId, principalId, this.scopeCaps);
    if (scope instanceof ScopeRefusal) {
      const reason = scope.scope === "tenant" ? "TenantCommands" : "PrincipalCommands";
      return this.refuse(reason, scope.cap, 1, scope.inUse);
    }
    this.queued++;
    this.retainedBytes += bytes;
    return new CommandReservation(this, scope, bytes);
  }

  /** Called by a reservation moving from queued to active. */
  activate(): void {
    this.queued--;
    this.active++;
  }

  /** Called by a reservation on its one release. */
  release(reservation: CommandReservation, wasActive: boolean): void {
    if (wasActive) this.active--;
    else this.queued--;
    this.retainedBytes -= reservation.retainedBytes;
    this.scopes.release(reservation.scope);
  }

  usage(): CommandLaneUsage {
    return {
      commands: this.queued + this.active,
      retainedBytes: this.retainedBytes,
      queued: this.queued,
      active: this.active,
    };
  }

  private refuse(
    reason: AdmissionRefusal["reason"],
    refusedBy: LaneLimit,
    requested: number,
    inUse: number,
  ): AdmissionRefusal {
    return new AdmissionRefusal(
      reason,
      "command",
      this.lane,
      refusedBy.property,
      refusedBy.value,
      requested,
      inUse,
    );
  }
}
