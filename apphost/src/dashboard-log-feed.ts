import { logRowOf } from "./dashboard-log-rows.js";
import type { LogRow } from "./dashboard-messages.js";
import { followLogs, type LogFollower } from "./log-follower.js";
import { isProbeLine } from "./log-line-format.js";
import { completeEnd, linesBefore } from "./voter-log-file.js";

export interface LogFeedOptions {
  readonly logs: readonly { readonly voter: string; readonly file: string }[];
  /** How many recent rows per voter a page gets when it connects. */
  readonly keepRows: number;
  /** How far back from each log's end to look for those rows at most. */
  readonly tailBytes: number;
}

/**
 * The voters' logs for the dashboard: the last rows of each log kept in memory, and every new line
 * handed on as it is written. Reads the end of each file at start, then only what is appended.
 */
export class LogFeed {
  private readonly recent = new Map<string, LogRow[]>();
  private readonly listeners = new Set<(rows: readonly LogRow[]) => void>();
  private readonly follower: LogFollower;
  private pending: LogRow[] = [];
  private seq = 0;

  constructor(private readonly options: LogFeedOptions) {
    const offsets = options.logs.map((log) => {
      const end = completeEnd(log.file);
      const lastFirst: string[] = [];
      for (const { line, offset } of linesBefore(log.file, end)) {
        if (offset < end - options.tailBytes || lastFirst.length === options.keepRows) break;
        if (line !== "" && !isProbeLine(line)) lastFirst.push(line);
      }
      this.recent.set(log.voter, []);
      for (const line of lastFirst.reverse()) this.keep(log.voter, line);
      return { ...log, offset: end };
    });
    this.follower = followLogs(offsets, (voter, line) => {
      const row = this.keep(voter, line);
      if (row === undefined) return;
      // Every line of one poll goes out as one event.
      if (this.pending.length === 0) setImmediate(() => this.flush());
      this.pending.push(row);
    });
  }

  /** The rows kept, oldest first, every voter's interleaved by time. */
  rows(): LogRow[] {
    return [...this.recent.values()].flat().sort((a, b) => (a.time ?? 0) - (b.time ?? 0) || a.seq - b.seq);
  }

  subscribe(listener: (rows: readonly LogRow[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    this.follower.stop();
    this.listeners.clear();
  }

  private keep(voter: string, line: string): LogRow | undefined {
    // The AppHost's own health, admission and metrics polls would drown everything else.
    if (line === "" || isProbeLine(line)) return undefined;
    const row = logRowOf(this.seq++, voter, line);
    const kept = this.recent.get(voter)!;
    kept.push(row);
    if (kept.length > this.options.keepRows) kept.splice(0, kept.length - this.options.keepRows);
    return row;
  }

  private flush(): void {
    const rows = this.pending;
    this.pending = [];
    for (const listener of this.listeners) listener(rows);
  }
}
