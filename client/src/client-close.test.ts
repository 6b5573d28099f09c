import { type AddressInfo, createServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  ConnectionError,
  KeyLoadClient,
  type KeyLoadClientOptions,
  UnknownWriteOutcomeError,
} from "./index.js";
import { errorBody, type ScriptedAnswer, ScriptedVoter } from "./test-fixtures/scripted-voter.js";

/**
 * close() ends the client: calls under way fail at once, and so does every call after it, with errors
 * that say whether the write may have been sent (UnknownWriteOutcome) or certainly was not
 * (ConnectionError ClientClosed, which no retry or resolveOutcome round gets past).
 */

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()));
});

/** Accepts connections and never answers. */
async function silent(): Promise<string> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  opened.push({
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function client(endpoints: string[], options: Partial<KeyLoadClientOptions> = {}): KeyLoadClient {
  const c = new KeyLoadClient({ endpoints, apiKey: "key-1", adaptiveThrottle: false, ...options });
  opened.push(c);
  return c;
}

const UNAVAILABLE: ScriptedAnswer = { status: 503, body: errorBody("Unavailable", "NoLeader") };
const UNKNOWN: ScriptedAnswer = {
  status: 504,
  body: errorBody("UnknownWriteOutcome", "ReplicationDeadline"),
};

async function closedWhile<T>(c: KeyLoadClient, call: Promise<T>, afterMs = 100): Promise<unknown> {
  const settled = call.then(
    () => "resolved",
    (error: unknown) => error,
  );
  await new Promise((resolve) => setTimeout(resolve, afterMs));
  const started = performance.now();
  await c.close();
  const error = await settled;
  expect(performance.now() - started).toBeLessThan(1_000);
  return error;
}

describe("close()", () => {
  it("fails the calls waiting for their answer at once: a write as UnknownWriteOutcome", async () => {
    const url = await silent();
    const c = client([url]);
    const read = c.get("k");
    const write = c.put("k", 1, { commandId: "cmd-open" }).catch((e: unknown) => e);
    const readError = await closedWhile(c, read);
    expect(readError).toBeInstanceOf(ConnectionError);
    expect(readError).toMatchObject({ reason: "ClientClosed" });
    const writeError = await write;
    expect(writeError).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(writeError).toMatchObject({ reason: "ClientClosed", commandId: "cmd-open" });
  });

  it("fails every call after it without sending anything", async () => {
    const v = await ScriptedVoter.start({ status: 200, body: { key: "k", value: 1, version: 1 } });
    opened.push(v);
    const c = client([v.url]);
    await c.close();
    const read = await c.get("k").catch((e: unknown) => e);
    expect(read).toBeInstanceOf(ConnectionError);
    expect(read).toMatchObject({ reason: "ClientClosed", mayHaveReachedVoter: false });
    const write = await c.put("k", 1, { commandId: "cmd-late" }).catch((e: unknown) => e);
    expect(write).toMatchObject({ name: "ConnectionError", reason: "ClientClosed", commandId: "cmd-late" });
    await expect(c.raw({ method: "GET", path: "/health/live" })).rejects.toMatchObject({
      reason: "ClientClosed",
    });
    const resolved = await c.resolveOutcome("cmd-r", (o) => c.put("k", 1, o)).catch((e: unknown) => e);
    expect(resolved).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(resolved).toMatchObject({ reason: "ClientClosed", commandId: "cmd-r" });
    expect(v.requests).toHaveLength(0);
  });

  it("ends calls waiting to retry, a write whose earlier attempt may have committed as UnknownWriteOutcome", async () => {
    const v = await ScriptedVoter.start(UNAVAILABLE);
    opened.push(v);
    const c = client([v.url], { backoff: { initialMs: 5_000, maxMs: 5_000 }, random: () => 0.99 });
    const read = c.get("k").catch((e: unknown) => e);
    const unsent = c.put("k", 1, { commandId: "cmd-503" }).catch((e: unknown) => e);
    // Both answered Unavailable (nothing submitted) before the next write is told its outcome is unknown.
    while (v.requests.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    v.script(UNKNOWN);
    const maybe = c.put("k", 2, { commandId: "cmd-504" });
    while (v.requests.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    const maybeError = await closedWhile(c, maybe, 20);
    expect(maybeError).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(maybeError).toMatchObject({ commandId: "cmd-504", reason: "ClientClosed" });
    expect(await read).toMatchObject({ name: "ConnectionError", reason: "ClientClosed" });
    expect(await unsent).toMatchObject({
      name: "ConnectionError",
      reason: "ClientClosed",
      commandId: "cmd-503",
    });
    expect(v.requests).toHaveLength(3);
  });

  it("ends a pager, and a resolveOutcome under way, as the client closes", async () => {
    const v = await ScriptedVoter.start({ status: 200, body: { items: [], next: "a" } }, UNAVAILABLE);
    opened.push(v);
    const c = client([v.url], { backoff: { initialMs: 5_000, maxMs: 5_000 }, random: () => 0.99 });
    const pages = (async () => {
      for await (const _doc of c.queryAll({ prefix: "" })) {
        // Nothing to collect.
      }
    })().catch((e: unknown) => e);
    const resolving = c.resolveOutcome("cmd-res", (o) => c.put("k", 1, o), { deadlineMs: 60_000 });
    const error = await closedWhile(c, resolving);
    expect(error).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(error).toMatchObject({ reason: "ClientClosed", commandId: "cmd-res" });
    expect(await pages).toMatchObject({ reason: "ClientClosed" });
  });

  it("lets many calls run at once without a listener warning, and closes twice alike", async () => {
    const v = await ScriptedVoter.start({ status: 200, body: { key: "k", value: 1, version: 1 } });
    opened.push(v);
    const c = client([v.url]);
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      await Promise.all(Array.from({ length: 50 }, () => c.get("k")));
      await new Promise((resolve) => setTimeout(resolve, 10));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings).toEqual([]);
    await Promise.all([c.close(), c.close()]);
    await c.close();
  });
});
