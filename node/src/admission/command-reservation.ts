import type { Lane } from "@keyload/contract";
import { ReservationStateError } from "./admission-errors.js";
import type { CommandLane } from "./command-lane.js";
import type { PrincipalScope } from "./verified-scopes.js";

const QUEUED = 0;
const ACTIVE = 1;
const RELEASED = 2;

/**
 * One admitted command's hold on its lane, from admission until its replication or forwarding
 * completes or fails. Whoever holds it releases it exactly once.
 */
export class CommandReservation {
  private state: typeof QUEUED | typeof ACTIVE | typeof RELEASED = QUEUED;

  constructor(
    private readonly owner: CommandLane,
    /** The verified principal's counters this reservation is counted in. */
    readonly scope: PrincipalScope,
    readonly retainedBytes: number,
  ) {}

  get lane(): Lane {
    return this.owner.lane;
  }

  get tenantId(): string {
    return this.scope.tenant.tenantId;
  }

  get principalId(): string {
    return this.scope.principalId;
  }

  get released(): boolean {
    return this.state === RELEASED;
  }

  /** The worker took the command into a replication unit: it now counts as active, not queued. */
  markActive(): void {
    if (this.state !== QUEUED)
      throw new ReservationStateError(
        `a ${this.lane} command reservation can only become active once, while queued`,
      );
    this.state = ACTIVE;
    this.owner.activate();
  }

  release(): void {
    if (this.state === RELEASED)
      throw new ReservationStateError(`a ${this.lane} command reservation was released twice`);
    const wasActive = this.state === ACTIVE;
    this.state = RELEASED;
    this.owner.release(this, wasActive);
  }
}
