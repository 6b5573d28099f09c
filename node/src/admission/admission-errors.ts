/** Typed errors the admission modules throw. Refusals are returned as values (AdmissionRefusal), not thrown. */
import { InternalError } from "@keyload/contract";

/** A configured limit that is not acceptable; the voter stops at start with this message. */
export class AdmissionOptionError extends Error {
  readonly code = "AdmissionInvalidOption";
  /** The configuration key, e.g. `KeyLoad:CommandAdmission:MaxCommands`. */
  readonly key: string;
  readonly value: unknown;

  constructor(key: string, value: unknown, expected: string) {
    super(
      `${key} must be ${expected}, got ${typeof value === "string" ? JSON.stringify(value) : String(value)}`,
    );
    this.name = new.target.name;
    this.key = key;
    this.value = value;
  }
}

/**
 * A reservation used after it was released (released twice, or marked active after release). It is a
 * bug in the caller; throwing keeps the counters exact where decrementing again would corrupt them.
 */
export class ReservationStateError extends InternalError {
  constructor(message: string) {
    super(message, { reason: "ReservationState" });
  }
}
