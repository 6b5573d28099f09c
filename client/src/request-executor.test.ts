import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it, vi } from "vitest";
import { resolveClientOptions } from "./client-options.js";
import { HttpTransport } from "./http-transport.js";
import { RequestExecutor } from "./request-executor.js";

const ENDPOINT = "http://127.0.0.1:1";

const opened: HttpTransport[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(opened.splice(0).map((t) => t.close()));
});

function executor(): { executor: RequestExecutor; transport: HttpTransport } {
  const options = resolveClientOptions({ endpoints: [ENDPOINT] });
  const transport = new HttpTransport(options);
  opened.push(transport);
  return { executor: new RequestExecutor(options, transport), transport };
}

function listeners(signal: AbortSignal): number {
  return getEventListeners(signal, "abort").length;
}

describe("RequestExecutor.pause", () => {
  it("follows the caller's signal and the client's close, and leaves no listener on either", async () => {
    // AbortSignal.any ties a new signal to each long-lived source, which Node 20 keeps until they abort.
    const any = vi.spyOn(AbortSignal, "any");
    const { executor: e, transport } = executor();
    const caller = new AbortController();
    await e.pause(5, caller.signal, ENDPOINT, "cmd-p");
    expect([listeners(caller.signal), listeners(transport.closedSignal)]).toEqual([0, 0]);

    const aborted = e.pause(10_000, caller.signal, ENDPOINT, "cmd-p");
    caller.abort();
    await expect(aborted).rejects.toMatchObject({ name: "ConnectionError", reason: "Aborted" });
    expect(listeners(transport.closedSignal)).toBe(0);

    const other = new AbortController();
    const closed = e.pause(10_000, other.signal, ENDPOINT, "cmd-p");
    await transport.close();
    await expect(closed).rejects.toMatchObject({ name: "ConnectionError", reason: "ClientClosed" });
    expect(listeners(other.signal)).toBe(0);
    expect(any).not.toHaveBeenCalled();
  });

  it("ends at once for a signal already aborted", async () => {
    const { executor: e } = executor();
    await expect(e.pause(10_000, AbortSignal.abort(), ENDPOINT, undefined)).rejects.toMatchObject({
      reason: "Aborted",
    });
  });

  it("waits out a delay longer than one timer can hold", async () => {
    const { executor: e } = executor();
    const started = performance.now();
    await expect(
      e.pause(2 ** 31 + 1_000, AbortSignal.timeout(100), ENDPOINT, undefined),
    ).rejects.toMatchObject({
      reason: "Aborted",
    });
    expect(performance.now() - started).toBeGreaterThanOrEqual(90);
  });
});
