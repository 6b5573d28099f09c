import { type ClusterSnapshot, describeSnapshot } from "./cluster-readiness.js";
import type { TerminalOutput } from "./terminal-output.js";

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"] as const;

/** Shows the readiness wait on the status line: each voter's role, and whether it is ready yet. */
export function readinessProgress(output: TerminalOutput): (snapshot: ClusterSnapshot) => void {
  let frame = 0;
  return (snapshot) => {
    const seconds = (snapshot.elapsedMs / 1000).toFixed(0);
    const spinner = process.stderr.isTTY ? `${SPINNER[frame++ % SPINNER.length]} ` : "";
    // The elapsed time is left out of a plain log, which gets a line only when the voters' states change.
    const elapsed = process.stderr.isTTY ? ` (${seconds} s)` : "";
    output.status(`${spinner}waiting for the cluster${elapsed}: ${describeSnapshot(snapshot)}`);
  };
}
