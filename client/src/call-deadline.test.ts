import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ConnectionError, KeyLoadClient, UnknownWriteOutcomeError } from "./index.js";

/**
 * A call's deadline bounds the whole exchange of each attempt: undici's own timeouts are per wait (for
 * the headers, between two chunks of the body), so an answer that trickles in never trips them.
 */

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()));
});

/** Answers 200 at once, then a byte of its body every 20 ms, never finishing. */
async function trickling(): Promise<string> {
  const responses = new Set<ServerResponse>();
  const server: Server = createServer((_request, response) => {
    responses.add(response);
    response.writeHead(200, { "content-type": "application/json" });
    response.write('{"key":"k","value":"');
    const timer = setInterval(() => response.write("x"), 20);
    response.on("close", () => clearInterval(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  opened.push({
    close: () => {
      for (const response of responses) response.destroy();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Answers every request 200 with `body`, after `delayMs`. */
async function slow(body: unknown, delayMs: number): Promise<string> {
  const server: Server = createServer((_request, response) => {
    setTimeout(() => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    }, delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  opened.push({
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("a call's deadline", () => {
  it("may be longer than one timer can hold, as may every other timeout", async () => {
    // One setTimeout of 2^31 ms or more fires after 1 ms: every call would end at once in Timeout.
    const url = await slow({ key: "k", value: 1, version: 1 }, 50);
    const huge = 2 ** 32;
    const c = new KeyLoadClient({
      endpoints: [url],
      apiKey: "key-1",
      adaptiveThrottle: false,
      deadlineMs: huge,
      requestTimeoutMs: huge,
      bodyTimeoutMs: huge * 4,
      connectTimeoutMs: huge,
      backoff: { initialMs: huge, maxMs: huge * 2 },
      // One attempt: a deadline cut at 1 ms ends the call at once, rather than retry after a long backoff.
      maxAttempts: 1,
    });
    opened.push(c);
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      await expect(c.get("k")).resolves.toMatchObject({ version: 1 });
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings).toEqual([]);
  });

  it("ends an attempt whose body still trickles in, whatever its per-wait timeouts", async () => {
    const url = await trickling();
    // Time to spare for a connection and headers: the first attempt runs on undici's timeouts alone.
    const c = new KeyLoadClient({
      endpoints: [url],
      apiKey: "key-1",
      adaptiveThrottle: false,
      deadlineMs: 600,
      connectTimeoutMs: 100,
      requestTimeoutMs: 200,
    });
    opened.push(c);
    for (const [call, type] of [
      [() => c.get("k"), ConnectionError],
      [() => c.put("k", 1, { commandId: "cmd-d" }), UnknownWriteOutcomeError],
    ] as const) {
      const started = performance.now();
      const error = await call().catch((e: unknown) => e);
      expect(performance.now() - started).toBeLessThan(1_500);
      expect(error).toBeInstanceOf(type);
      if (error instanceof ConnectionError) expect(error.reason).toBe("Timeout");
    }
  });
});
