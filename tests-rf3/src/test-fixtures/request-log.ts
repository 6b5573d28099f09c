import type { TestCluster, VoterName } from "@keyload/apphost/testing";

/** The line a voter logs once a public request's response is over (the edge's request observer). */
export interface RequestLogLine {
  readonly method: string;
  readonly route: string;
  /** Null when the client went away before the response was written. */
  readonly status: number | null;
  readonly aborted: boolean;
  readonly commandId?: string;
  /** Absent when the request ended before its key was verified. */
  readonly tenantId?: string;
}

/** Every request line `voter` has logged so far, oldest first. */
export function requestLines(cluster: TestCluster, voter: VoterName): RequestLogLine[] {
  const lines: RequestLogLine[] = [];
  for (const text of cluster.logs(voter).split("\n")) {
    if (!text.includes('"msg":"request"')) continue;
    try {
      lines.push(JSON.parse(text) as RequestLogLine);
    } catch {
      // A line cut short by a process killed while writing it.
    }
  }
  return lines;
}

/** Whether `voter` has seen the client of the write `commandId` hang up before its answer. */
export function sawHangUp(cluster: TestCluster, voter: VoterName, commandId: string): boolean {
  return requestLines(cluster, voter).some((line) => line.aborted && line.commandId === commandId);
}
