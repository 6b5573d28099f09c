import { VOTER_NAMES, type VoterName } from "../app-model.js";

/** What `dumpLogsOnFailure` needs of a test framework's test context (vitest's, for one). */
export interface FailureHookContext {
  onTestFailed(handler: () => void): void;
}

/** Anything with voter logs: a TestCluster. */
export interface LogSource {
  logs(voter: VoterName): string;
}

/**
 * Attaches the voters' logs to the current test should it fail: the last `lines` lines of each voter
 * are printed with the failure, where a passing test prints nothing.
 */
export function dumpLogsOnFailure(context: FailureHookContext, cluster: LogSource, lines = 80): void {
  context.onTestFailed(() => {
    for (const name of VOTER_NAMES) {
      const tail = cluster.logs(name).split("\n").filter(Boolean).slice(-lines);
      console.error(`----- ${name}: last ${tail.length} log lines -----\n${tail.join("\n")}`);
    }
  });
}
