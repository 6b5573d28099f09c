import { readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";

/** How much nicer than the voter's own threads its background threads run. */
const BACKGROUND_NICE_STEP = 10;
const MAX_NICE = 19;

/**
 * Lowers the scheduling priority of the calling thread (Linux: a thread's nice value is its own), for
 * worker threads whose work can wait: a snapshot copy then takes the CPU the request path leaves idle
 * instead of a share of a busy voter's. At nice +10 a thread still gets about a tenth of a contended
 * core, so it slows down under load but never stops. Elsewhere (no /proc/thread-self) a no-op.
 */
export function lowerThreadPriority(): void {
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (!Number.isSafeInteger(tid) || tid <= 0) return;
    setPriority(tid, Math.min(MAX_NICE, getPriority(tid) + BACKGROUND_NICE_STEP));
  } catch {
    // Another platform, or /proc not mounted: the thread keeps the process's priority.
  }
}
