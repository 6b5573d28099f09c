/** Whether Ctrl-C (SIGINT) or SIGTERM has arrived, for a command that runs until it does. */
export interface Interruption {
  readonly interrupted: boolean;
  readonly signalled: Promise<void>;
}

/**
 * Runs `work` until it ends or SIGINT or SIGTERM arrives, whichever comes first; an interruption ends
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
  process.once("SIGINT", handler);
  process.once("SIGTERM", handler);
  try {
    await Promise.race([work(state), signalled]);
  } finally {
    process.off("SIGINT", handler);
    process.off("SIGTERM", handler);
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
