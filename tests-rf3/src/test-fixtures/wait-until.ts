import { setTimeout as sleep } from "node:timers/promises";

export interface WaitOptions {
  readonly timeoutMs?: number;
  readonly intervalMs?: number;
}

/**
 * Polls `probe` until it returns something other than undefined, and returns that. Throws once
 * `timeoutMs` has passed, naming `what` and the last value `describe` was given: timing on a shared
 * machine is noisy, so tests wait for conditions rather than for fixed times.
 */
export async function waitUntil<T>(
  what: string,
  probe: (describe: (seen: unknown) => void) => Promise<T | undefined>,
  options: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let last: unknown = "nothing yet";
  const describe = (seen: unknown): void => {
    last = seen;
  };
  for (;;) {
    const value = await probe(describe);
    if (value !== undefined) return value;
    if (Date.now() >= deadline) {
      throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(last, null, 2)}`);
    }
    await sleep(options.intervalMs ?? 100);
  }
}

/** An error as a short line, for `describe`. */
export function errorLine(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return `${error.name}${typeof code === "string" ? ` ${code}` : ""}: ${error.message}`;
}
