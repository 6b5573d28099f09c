import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { onAbort } from "./abort-listeners.js";
import { resolveClientOptions } from "./client-options.js";
import { ExchangeSignal } from "./exchange-signal.js";
import { HttpTransport } from "./http-transport.js";
import { KeyLoadClient } from "./index.js";
import { RequestExecutor } from "./request-executor.js";
import { ScriptedVoter } from "./test-fixtures/scripted-voter.js";

/**
 * Many calls may share one caller's signal (a request's, a shutdown's). One listener each would pass
 * Node's limit of 10 and print MaxListenersExceededWarning under ordinary load: they share one.
 */

const CALLS = 20;

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()));
});

function listeners(signal: AbortSignal): number {
  return getEventListeners(signal, "abort").length;
}

describe("onAbort", () => {
  it("holds one listener however many wait, calls each once, and none once all stopped", () => {
    const controller = new AbortController();
    const calls: number[] = [];
    const stops = Array.from({ length: CALLS }, (_, i) => onAbort(controller.signal, () => calls.push(i)));
    expect(listeners(controller.signal)).toBe(1);
    stops[0]!();
    stops[0]!();
    controller.abort();
    expect(calls).toEqual(Array.from({ length: CALLS - 1 }, (_, i) => i + 1));
    expect(listeners(controller.signal)).toBe(0);
    for (const stop of stops) stop();

    const other = new AbortController();
    const all = Array.from({ length: CALLS }, () => onAbort(other.signal, () => calls.push(-1)));
    for (const stop of all) stop();
    expect(listeners(other.signal)).toBe(0);
    // Listening again after every callback stopped.
    onAbort(other.signal, () => calls.push(-2));
    other.abort();
    expect(calls.at(-1)).toBe(-2);
  });
});

describe("calls sharing a caller's signal", () => {
  it("add one listener to it between them, and none once they are done", async () => {
    const options = resolveClientOptions({ endpoints: ["http://127.0.0.1:1"] });
    const transport = new HttpTransport(options);
    opened.push(transport);
    const executor = new RequestExecutor(options, transport);
    const caller = new AbortController();
    const exchanges = Array.from(
      { length: CALLS },
      () => new ExchangeSignal(caller.signal, transport.closedSignal, 10_000),
    );
    const pauses = Array.from({ length: CALLS }, () =>
      executor.pause(10_000, caller.signal, "http://127.0.0.1:1", undefined).catch((e: unknown) => e),
    );
    expect(listeners(caller.signal)).toBe(1);
    caller.abort();
    for (const pause of await Promise.all(pauses)) expect(pause).toMatchObject({ reason: "Aborted" });
    expect(exchanges.map((exchange) => exchange.end)).toEqual(Array(CALLS).fill("Aborted"));
    expect(listeners(caller.signal)).toBe(0);
  });

  it("print no MaxListenersExceededWarning", async () => {
    const v = await ScriptedVoter.start({ status: 200, body: { key: "k", value: 1, version: 1 } });
    const c = new KeyLoadClient({ endpoints: [v.url], apiKey: "key-1", adaptiveThrottle: false });
    opened.push(v, c);
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning.name);
    };
    process.on("warning", onWarning);
    try {
      const caller = new AbortController();
      await Promise.all(Array.from({ length: CALLS }, () => c.get("k", { signal: caller.signal })));
      // Node emits a warning on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(listeners(caller.signal)).toBe(0);
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings).toEqual([]);
  });
});
