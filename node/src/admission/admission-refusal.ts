import {
  type Governor,
  type Lane,
  type ResourceExhaustedDetails,
  ResourceExhaustedError,
  type ResourceExhaustedReason,
} from "@keyload/contract";

/**
 * A refused admission, as a plain value. Constructing an Error costs ten times an admission (V8 builds
 * it and captures a stack); a governor under a flood of refusals must not spend more than it spends
 * admitting, so the error is only built by `toError` when a response is actually written.
 */
export class AdmissionRefusal {
  constructor(
    readonly reason: ResourceExhaustedReason,
    readonly governor: Governor,
    /** The command lane or the HTTP pool that refused. */
    readonly lane: Lane,
    /** The configuration property that refused, e.g. `MaxRetainedBytes`. */
    readonly limit: string,
    readonly limitValue: number,
    /** What the refused request needed of that limit (bytes or a count of one). */
    readonly requested: number,
    readonly inUse: number,
    /** The Retry-After the refusing pool advises; undefined: the contract's default. */
    private readonly advisedRetryAfterSeconds?: number,
  ) {}

  get details(): ResourceExhaustedDetails {
    const where = this.governor === "command" ? { lane: this.lane } : { pool: this.lane };
    return {
      governor: this.governor,
      ...where,
      limit: this.limit,
      limitValue: this.limitValue,
      requested: this.requested,
      inUse: this.inUse,
    };
  }

  get message(): string {
    const where = this.governor === "command" ? `${this.lane} lane` : `${this.lane} pool`;
    return (
      `${this.governor} admission refused on the ${where} (${this.reason}): ${this.limit} is ` +
      `${this.limitValue}, ${this.inUse} in use, ${this.requested} requested`
    );
  }

  /** Seconds the refused caller is told to wait; undefined: the contract's default. */
  protected get retryAfterSeconds(): number | undefined {
    return this.advisedRetryAfterSeconds;
  }

  /**
   * The contract's error for this refusal. Its stack is left empty: an admission refusal is an expected
   * answer, not a fault, and capturing a stack would make each refused request cost microseconds.
   */
  toError(commandId?: string, byLeader?: boolean): ResourceExhaustedError {
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      // A command refusal says whether the leader refused it (every voter would relay the same) or a
      // follower's own governor did (its limits may differ from the others'): a client moves on only
      // from the latter.
      const details = byLeader === undefined ? this.details : { ...this.details, leader: byLeader };
      return new ResourceExhaustedError(this.reason, this.message, details, {
        ...(commandId === undefined ? {} : { commandId }),
        ...(this.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: this.retryAfterSeconds }),
      });
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
  }
}
