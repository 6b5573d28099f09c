import { logSize, readFrom } from "./voter-log-file.js";

/** At most this much of a log is read at once, however much was written since the last poll. */
const READ_BYTES = 1024 * 1024;

export interface FollowedLog {
  readonly voter: string;
  readonly file: string;
  /** Where to start reading; the end of the file to see only what is written from now on. */
  readonly offset?: number;
}

export interface LogFollower {
  /** Reads what is left and stops. */
  stop(): void;
}

/**
 * Follows voter log files by polling, calling `onLine` for every complete line. Polling, rather than
 * fs.watch, behaves the same on every platform and file system, and a voter's log is not latency-critical.
 */
export function followLogs(
  logs: readonly FollowedLog[],
  onLine: (voter: string, line: string) => void,
  intervalMs = 100,
): LogFollower {
  const cursors = logs.map((log) => ({ ...log, offset: log.offset ?? logSize(log.file), partial: "" }));
  const poll = (): void => {
    for (const cursor of cursors) {
      for (;;) {
        const { text, end } = readFrom(cursor.file, cursor.offset, READ_BYTES);
        if (end < cursor.offset) cursor.partial = "";
        cursor.offset = end;
        if (text === "") break;
        const lines = (cursor.partial + text).split("\n");
        cursor.partial = lines.pop() ?? "";
        for (const line of lines) onLine(cursor.voter, line);
      }
    }
  };
  const timer = setInterval(poll, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      poll();
    },
  };
}
