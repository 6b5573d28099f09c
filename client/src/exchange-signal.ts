import { onAbort } from "./abort-listeners.js";
import { type LongTimeout, setLongTimeout } from "./long-timeout.js";

/** What ended an exchange before its answer was read: the caller, the client's close or the call's deadline. */
export type ExchangeEnd = "Aborted" | "ClientClosed" | "Timeout";

/**
 * One exchange's abort signal for undici, which fires at the first of the caller's signal, the client's
 * close and the call's deadline, and remembers which it was. A plain timer and two abort callbacks,
 * released as the exchange settles: AbortSignal.timeout and AbortSignal.any on every call would leave a
 * timer pending and listeners attached long after the answer came.
 */
export class ExchangeSignal {
  private readonly controller = new AbortController();
  private readonly timer: LongTimeout | undefined;
  private readonly detach: (() => void)[] = [];
  private ended: ExchangeEnd | undefined;

  constructor(caller: AbortSignal | undefined, closed: AbortSignal, timeLeftMs: number | undefined) {
    this.follow(caller, "Aborted");
    this.follow(closed, "ClientClosed");
    if (this.ended === undefined && timeLeftMs !== undefined) {
      // A deadline of 2^31 ms or more is armed in steps: one timer would fire after 1 ms.
      // An answer's body a caller never reads must not hold the process open until the deadline.
      this.timer = setLongTimeout(
        () => this.finish("Timeout", new DOMException("the call's deadline passed", "TimeoutError")),
        Math.max(1, Math.ceil(timeLeftMs)),
        { unref: true },
      );
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Which of its sources ended the exchange; undefined while none has. */
  get end(): ExchangeEnd | undefined {
    return this.ended;
  }

  /** The exchange has settled: stop the timer and stop listening. */
  release(): void {
    this.timer?.clear();
    for (const detach of this.detach.splice(0)) detach();
  }

  private follow(source: AbortSignal | undefined, end: ExchangeEnd): void {
    if (source === undefined || this.ended !== undefined) return;
    if (source.aborted) {
      this.finish(end, source.reason);
      return;
    }
    this.detach.push(onAbort(source, () => this.finish(end, source.reason)));
  }

  private finish(end: ExchangeEnd, reason: unknown): void {
    if (this.ended !== undefined) return;
    this.ended = end;
    this.release();
    this.controller.abort(reason);
  }
}
