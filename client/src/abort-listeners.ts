interface Fanout {
  readonly callbacks: Set<() => void>;
  readonly listener: () => void;
}

const fanouts = new WeakMap<AbortSignal, Fanout>();

/**
 * Calls `callback` once `signal` (not aborted yet) aborts, until the function it returns is called.
 * However many calls share one caller's signal, it holds one listener of the client's, attached while
 * any of them waits: one each would pass Node's limit of 10 and print MaxListenersExceededWarning under
 * ordinary load.
 */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let fanout = fanouts.get(signal);
  if (fanout === undefined) {
    const callbacks = new Set<() => void>();
    const listener = (): void => {
      fanouts.delete(signal);
      // A copy: each callback stops listening as it runs.
      for (const each of [...callbacks]) each();
    };
    fanout = { callbacks, listener };
    fanouts.set(signal, fanout);
    signal.addEventListener("abort", listener, { once: true });
  }
  const current = fanout;
  current.callbacks.add(callback);
  return () => {
    if (!current.callbacks.delete(callback) || current.callbacks.size > 0) return;
    if (fanouts.get(signal) !== current) return;
    fanouts.delete(signal);
    signal.removeEventListener("abort", current.listener);
  };
}
