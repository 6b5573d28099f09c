/** A command line the simulator's CLI cannot run: it prints the message and exits 2, no stack. */
export class SimUsageError extends Error {
  readonly code = "SIM_USAGE";
  override readonly name = "SimUsageError";
}
