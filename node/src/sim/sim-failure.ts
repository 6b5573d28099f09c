import type { NodeId } from "../raft/index.js";
import { type InvariantName, InvariantViolation } from "./invariants.js";

/** A broken invariant, with everything needed to reproduce and read it. */
export class SimulationFailure extends Error {
  constructor(
    readonly seed: number,
    readonly invariant: InvariantName,
    readonly detail: string,
    readonly step: number,
    readonly time: number,
    readonly trace: string,
  ) {
    super(`seed ${seed}: ${invariant} violated at step ${step} (t=${time}): ${detail}\n${trace}`);
    this.name = "SimulationFailure";
  }

  /** The run of `seed` broke `violation` at `step`, simulated time `time`. */
  static of(
    seed: number,
    violation: InvariantViolation,
    step: number,
    time: number,
    trace: string,
  ): SimulationFailure {
    return new SimulationFailure(seed, violation.invariant, violation.detail, step, time, trace);
  }
}

export function fail(invariant: InvariantName, detail: string): never {
  throw new InvariantViolation(invariant, detail);
}

/** A core that throws where it should not has broken its contract; its own invariant errors included. */
export function coreFailure(node: NodeId, call: string, error: unknown): InvariantViolation {
  if (error instanceof InvariantViolation) return error;
  return new InvariantViolation("core-contract", `${node}.${call} threw ${describeError(error)}`);
}

export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
