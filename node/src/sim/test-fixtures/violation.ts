import { type InvariantName, InvariantViolation } from "../invariants.js";

/** The invariant `run` found broken, or undefined when it threw nothing. */
export function violation(run: () => void): InvariantName | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof InvariantViolation) return error.invariant;
    throw error;
  }
  return undefined;
}
