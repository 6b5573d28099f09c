/**
 * The signals that stop a command that runs until told: Ctrl-C, `kill`, and the terminal closing
 * (SIGHUP), which would otherwise kill the AppHost without stopping its voters.
 */
export const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/** Whether one of STOP_SIGNALS has arrived, for a command that runs until it does. */
export interface Interruption {
  readonly interrupted: boolean;
  readonly signalled: Promise<void>;
}

/**
 * Runs `work` until it ends or one of STOP_SIGNALS arrives, whichever comes first; an interruption ends
 * the command normally (`logs --follow`, `status --watch`). The handlers are removed afterwards.
 */
export async function untilInterrupted(work: (interruption: Interruption) => Promise<void>): Promise<void> {
  let onSignal = (): void => {};
  const signalled = new Promise<void>((resolve) => {
    onSignal = resolve;
  });
  const state = { interrupted: false, signalled };
  const handler = (): void => {
    state.interrupted = true;
    onSignal();
  };
  for (const signal of STOP_SIGNALS) process.once(signal, handler);
  try {
    await Promise.race([work(state), signalled]);
  } finally {
    for (const signal of STOP_SIGNALS) process.off(signal, handler);
  }
}

/** Waits `ms`, or less when the interruption comes first. */
export function pause(ms: number, interruption: Interruption): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, Math.max(0, ms));
    void interruption.signalled.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
