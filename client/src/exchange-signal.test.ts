import { describe, expect, it } from "vitest";
import { ExchangeSignal } from "./exchange-signal.js";

describe("ExchangeSignal", () => {
  it("ends at the first of its sources, and remembers which", async () => {
    const caller = new AbortController();
    const closed = new AbortController();
    const byCaller = new ExchangeSignal(caller.signal, closed.signal, 10_000);
    caller.abort();
    closed.abort();
    expect([byCaller.signal.aborted, byCaller.end]).toEqual([true, "Aborted"]);

    const byClose = new ExchangeSignal(undefined, closed.signal, 10_000);
    expect(byClose.end).toBe("ClientClosed");

    const byDeadline = new ExchangeSignal(undefined, new AbortController().signal, 10);
    await new Promise((resolve) => byDeadline.signal.addEventListener("abort", resolve));
    expect(byDeadline.end).toBe("Timeout");
  });

  it("waits out a deadline longer than one timer can hold", async () => {
    // One setTimeout of 2^31 ms or more fires after 1 ms.
    const exchange = new ExchangeSignal(undefined, new AbortController().signal, 2 ** 32);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect([exchange.signal.aborted, exchange.end]).toEqual([false, undefined]);
    exchange.release();
  });

  it("stops listening and timing once released", async () => {
    const caller = new AbortController();
    const exchange = new ExchangeSignal(caller.signal, new AbortController().signal, 10);
    exchange.release();
    caller.abort();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect([exchange.signal.aborted, exchange.end]).toEqual([false, undefined]);
  });
});
