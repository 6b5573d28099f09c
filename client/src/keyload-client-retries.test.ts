import { type AddressInfo, createServer, type Socket } from "node:net";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import {
  ConnectionError,
  FailedPreconditionError,
  InternalError,
  InvalidArgumentError,
  KeyLoadClient,
  type KeyLoadClientOptions,
  ResourceExhaustedError,
  UnavailableError,
  UnknownWriteOutcomeError,
} from "./index.js";
import { closedPort } from "./test-fixtures/closed-port.js";
import { errorBody, type ScriptedAnswer, ScriptedVoter } from "./test-fixtures/scripted-voter.js";
import { StalledListener } from "./test-fixtures/stalled-listener.js";

const OK_PUT = { status: 200, body: { commandId: "from-voter", key: "k", version: 1 } };
const UNAVAILABLE: ScriptedAnswer = { status: 503, body: errorBody("Unavailable", "NoLeader") };
const UNKNOWN: ScriptedAnswer = {
  status: 504,
  body: errorBody("UnknownWriteOutcome", "ReplicationDeadline"),
};

const opened: { close(): Promise<void> }[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()));
});

async function voter(...answers: ScriptedAnswer[]): Promise<ScriptedVoter> {
  const v = await ScriptedVoter.start(...answers);
  opened.push(v);
  return v;
}

function client(endpoints: string[], options: Partial<KeyLoadClientOptions> = {}): KeyLoadClient {
  const c = new KeyLoadClient({
    endpoints,
    apiKey: "key-1",
    backoff: { initialMs: 1, maxMs: 5 },
    adaptiveThrottle: false,
    ...options,
  });
  opened.push(c);
  return c;
}

function commandIds(v: ScriptedVoter): (string | string[] | undefined)[] {
  return v.requests.map((r) => r.headers["keyload-command-id"]);
}

describe("KeyLoadClient retries", () => {
  it("retries a write on UnknownWriteOutcome and Unavailable under its own command ID, sending the same body", async () => {
    const v = await voter(UNKNOWN, UNAVAILABLE, OK_PUT);
    const result = await client([v.url]).put("k", { n: 1 }, { expectedVersion: 0 });
    expect(result.version).toBe(1);
    expect(v.requests).toHaveLength(3);
    const ids = commandIds(v);
    expect(ids[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(ids).size).toBe(1);
    expect(new Set(v.requests.map((r) => r.body))).toEqual(
      new Set(['{"value":{"n":1},"expectedVersion":0}']),
    );
    expect(v.requests[0]!.headers.authorization).toBe("Bearer key-1");
    expect(v.requests[0]!.headers["content-type"]).toBe("application/json");
  });

  it("never retries a definite answer, and binds the command ID to its error", async () => {
    const v = await voter({ status: 412, body: errorBody("FailedPrecondition", "VersionMismatch") });
    const error = await client([v.url])
      .put("k", 1, { commandId: "cmd-412" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect(error).toMatchObject({
      commandId: "cmd-412",
      status: 412,
      reason: "VersionMismatch",
      endpoint: v.url,
    });
    expect(v.requests).toHaveLength(1);
  });

  it("fails over at once from a closed port to the next voter, and keeps asking the one that answered", async () => {
    const dead = await closedPort();
    const v = await voter(OK_PUT);
    const c = client([dead, v.url]);
    await c.put("k", 1, { commandId: "cmd-fo" });
    expect(commandIds(v)).toEqual(["cmd-fo"]);
    expect(c.preferredEndpoint).toBe(v.url);
    await c.get("k").catch(() => undefined);
    expect(v.requests).toHaveLength(2);
  });

  it("follows a leader hint to the listed voter it names, skipping the others", async () => {
    const leader = await voter(OK_PUT);
    const other = await voter(OK_PUT);
    const follower = await voter({
      status: 503,
      headers: { "KeyLoad-Leader": `id="voter3", url="${leader.url}/"` },
      body: errorBody("Unavailable", "LeaderUnreachable"),
    });
    const c = client([follower.url, other.url, leader.url]);
    await c.put("k", 1, { commandId: "cmd-hint" });
    expect([follower.requests.length, other.requests.length]).toEqual([1, 0]);
    expect(commandIds(leader)).toEqual(["cmd-hint"]);
    expect(c.preferredEndpoint).toBe(leader.url);
  });

  it("never sends the key to a hinted URL the caller did not list", async () => {
    const stranger = await voter(OK_PUT);
    const next = await voter(OK_PUT);
    const first = await voter({
      status: 504,
      headers: { "KeyLoad-Leader": `id="x", url="${stranger.url}"` },
      body: errorBody("UnknownWriteOutcome"),
    });
    await client([first.url, next.url]).put("k", 1);
    expect(stranger.requests).toHaveLength(0);
    expect(next.requests).toHaveLength(1);
  });

  it("ends a write whose earlier attempt may have committed in UnknownWriteOutcome, whatever came last", async () => {
    const v = await voter(UNKNOWN, UNAVAILABLE);
    const error = await client([v.url], { maxAttempts: 3 })
      .put("k", 1, { commandId: "cmd-u" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(error).toMatchObject({ commandId: "cmd-u", reason: "RetriesExhausted" });
    expect((error as Error).cause).toBeInstanceOf(UnavailableError);
    expect(v.requests).toHaveLength(3);
  });

  it("retries a write answered Internal under its own command ID, as one that may have committed", async () => {
    const internal: ScriptedAnswer = { status: 500, body: errorBody("Internal", "Unexpected") };
    const v = await voter(internal, OK_PUT);
    await client([v.url]).put("k", 1, { commandId: "cmd-500" });
    expect(commandIds(v)).toEqual(["cmd-500", "cmd-500"]);
    v.script(internal, UNAVAILABLE);
    const error = await client([v.url], { maxAttempts: 2 })
      .put("k", 1, { commandId: "cmd-500u" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(error).toMatchObject({ commandId: "cmd-500u", reason: "RetriesExhausted" });
    // A read answered Internal is not retried: nothing of it can have applied, and asking again would not help.
    v.script(internal);
    await expect(client([v.url]).get("k")).rejects.toBeInstanceOf(InternalError);
    expect(v.requests).toHaveLength(5);
  });

  it("reports Unavailable as such when no attempt can have committed", async () => {
    const v = await voter(UNAVAILABLE);
    const error = await client([v.url], { maxAttempts: 2 })
      .put("k", 1, { commandId: "cmd-n" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error).toMatchObject({ commandId: "cmd-n" });
  });

  it("retries a write whose answer broke off after the headers, under the same ID", async () => {
    const v = await voter({ status: 200, cutBody: true }, OK_PUT);
    await client([v.url]).put("k", 1, { commandId: "cmd-cut" });
    expect(commandIds(v)).toEqual(["cmd-cut", "cmd-cut"]);
  });

  it("stops retrying once the retry budget is spent", async () => {
    const v = await voter(UNAVAILABLE);
    const c = client([v.url], { retryBudget: { ratio: 0, capacity: 2, refillPerSecond: 0 } });
    await expect(c.get("k")).rejects.toBeInstanceOf(UnavailableError);
    expect(v.requests).toHaveLength(3);
    await expect(c.get("k")).rejects.toBeInstanceOf(UnavailableError);
    expect(v.requests).toHaveLength(4);
  });

  it("stops retrying at the call's deadline", async () => {
    const v = await voter(UNAVAILABLE);
    const started = Date.now();
    const c = client([v.url], { deadlineMs: 150, backoff: { initialMs: 40, maxMs: 40 }, random: () => 0.99 });
    await expect(c.get("k")).rejects.toBeInstanceOf(UnavailableError);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(v.requests.length).toBeLessThanOrEqual(5);
  });

  it("ends a call at its deadline, even while an attempt still waits for its answer", async () => {
    // Accepts connections and never answers.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    opened.push({
      close: () => {
        for (const socket of sockets) socket.destroy();
        return new Promise<void>((resolve) => silent.close(() => resolve()));
      },
    });
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const c = client([url], { deadlineMs: 300, requestTimeoutMs: 10_000 });
    for (const [call, expected] of [
      [() => c.get("k"), { name: "ConnectionError", reason: "Timeout" }],
      // Its attempt may have reached the voter: a write's outcome is unknown.
      [() => c.put("k", 1), { name: "UnknownWriteOutcomeError" }],
    ] as const) {
      const started = Date.now();
      await expect(call()).rejects.toMatchObject(expected);
      expect(Date.now() - started).toBeLessThan(1_500);
    }
  });

  it("ends a call at its deadline, even while an attempt still waits for its connection", async () => {
    const stalled = await StalledListener.start();
    opened.push(stalled);
    // The agent's connect timeout outlasts the deadline, and the wait for the headers then starts.
    const c = client([stalled.url], { deadlineMs: 300, connectTimeoutMs: 5_000, requestTimeoutMs: 10_000 });
    // With time to spare, only the caller's abort can end the wait.
    const spare = client([stalled.url], { connectTimeoutMs: 5_000 });
    for (const [call, expected] of [
      [() => c.get("k"), { name: "ConnectionError", reason: "Timeout" }],
      // Cut short by the deadline, it cannot tell whether it was sent: a write's outcome is unknown.
      [() => c.put("k", 1), { name: "UnknownWriteOutcomeError" }],
      // The caller's own abort ends the wait for a connection too.
      [
        () => spare.get("k", { signal: AbortSignal.timeout(100) }),
        { name: "ConnectionError", reason: "Aborted" },
      ],
    ] as const) {
      const started = Date.now();
      await expect(call()).rejects.toMatchObject(expected);
      expect(Date.now() - started).toBeLessThan(1_500);
    }
  });

  it("waits out Retry-After, and a random share of it again, before trying a refused request again", async () => {
    const refused: ScriptedAnswer = {
      status: 429,
      headers: { "retry-after": "1" },
      body: errorBody("ResourceExhausted", "CommandCount", { governor: "command", lane: "data" }),
    };
    const v = await voter(refused, OK_PUT);
    await client([v.url], { random: () => 0.5 }).put("k", 1);
    expect(v.requests).toHaveLength(2);
    expect(v.requests[1]!.at - v.requests[0]!.at).toBeGreaterThanOrEqual(1_490);
    expect(new Set(commandIds(v)).size).toBe(1);

    v.script(refused);
    const error = await client([v.url], { retryResourceExhausted: false })
      .put("k", 1)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResourceExhaustedError);
    expect(error).toMatchObject({
      retryAfter: 1_000,
      governor: "command",
      lane: "data",
      reason: "CommandCount",
    });
    expect(v.requests).toHaveLength(3);
  });

  it("cuts the random share of a Retry-After to fit the deadline instead of giving up", async () => {
    const refused: ScriptedAnswer = {
      status: 429,
      headers: { "retry-after": "2" },
      body: errorBody("ResourceExhausted", "CommandCount", { governor: "command", lane: "data" }),
    };
    const v = await voter(refused, OK_PUT);
    // Spread to nearly 4 s, the wait would pass the 3.2 s deadline; 2 s and part of the rest fits, with
    // room left for a loaded machine's timers before the deadline.
    await client([v.url], { random: () => 0.99, deadlineMs: 3_200 }).put("k", 1);
    expect(v.requests).toHaveLength(2);
    const waited = v.requests[1]!.at - v.requests[0]!.at;
    expect(waited).toBeGreaterThanOrEqual(2_000);
    expect(waited).toBeLessThan(3_200);
    // A Retry-After the deadline cannot hold ends the call at once, with no second attempt.
    v.script({ ...refused, headers: { "retry-after": "30" } });
    const sent = v.requests.length;
    const started = Date.now();
    const error = await client([v.url], { deadlineMs: 20_000 })
      .put("k", 1)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResourceExhaustedError);
    expect(v.requests.length - sent).toBe(1);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("waits a second before trying again a 429 that came without Retry-After", async () => {
    const refused: ScriptedAnswer = {
      status: 429,
      body: errorBody("ResourceExhausted", "CommandCount", { governor: "command", lane: "data" }),
    };
    const v = await voter(refused, OK_PUT);
    await client([v.url], { random: () => 0 }).put("k", 1);
    expect(v.requests).toHaveLength(2);
    expect(v.requests[1]!.at - v.requests[0]!.at).toBeGreaterThanOrEqual(990);
  });

  it("never retries a body over the cap", async () => {
    const v = await voter({
      status: 413,
      body: errorBody("ResourceExhausted", "BodyTooLarge", { governor: "http", pool: "data" }),
    });
    const error = await client([v.url])
      .put("k", 1)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 413, reason: "BodyTooLarge", pool: "data" });
    expect(v.requests).toHaveLength(1);
  });

  it("throttles locally once the cluster refuses most requests, without asking it", async () => {
    const refused: ScriptedAnswer = {
      status: 429,
      headers: { "retry-after": "1" },
      body: errorBody("ResourceExhausted", "CommandCount", { governor: "command", lane: "data" }),
    };
    const v = await voter(refused);
    const c = client([v.url], {
      adaptiveThrottle: { k: 2 },
      retryResourceExhausted: false,
      random: () => 0.4,
    });
    // No history: probability 0; one refusal: (1 − 0) / 2 = 0.5 > 0.4.
    await expect(c.get("k")).rejects.toMatchObject({ governor: "command" });
    const local = await c.put("k", 1, { commandId: "cmd-t" }).catch((e: unknown) => e);
    expect(local).toBeInstanceOf(ResourceExhaustedError);
    expect(local).toMatchObject({
      governor: "client",
      reason: "ClientThrottled",
      commandId: "cmd-t",
      status: 429,
    });
    expect(v.requests).toHaveLength(1);
  });

  it("streams an upload chunked, and retries it only when it can open the body again", async () => {
    const v = await voter(UNAVAILABLE, OK_PUT);
    const chunks = () => Readable.from([Buffer.from('{"value":'), Buffer.from('"x"}')]);
    await client([v.url]).upload("PUT", "/v1/catalog/k", chunks, { commandId: "cmd-s" });
    expect(v.requests).toHaveLength(2);
    for (const request of v.requests) {
      expect(request.headers["transfer-encoding"]).toBe("chunked");
      expect(request.headers["content-length"]).toBeUndefined();
      expect(request.body).toBe('{"value":"x"}');
      expect(request.headers["keyload-command-id"]).toBe("cmd-s");
    }
    v.script(UNAVAILABLE, OK_PUT);
    async function* once() {
      yield new TextEncoder().encode('{"value":1}');
    }
    await expect(client([v.url]).upload("PUT", "/v1/catalog/k", once())).rejects.toBeInstanceOf(
      UnavailableError,
    );
    expect(v.requests).toHaveLength(3);
  });

  it("gives the retry budget its token back when the wait before a retry is cut short", async () => {
    const v = await voter(UNAVAILABLE);
    let jitter = 0.99;
    const c = client([v.url], {
      backoff: { initialMs: 5_000, maxMs: 5_000 },
      random: () => jitter,
      retryBudget: { ratio: 0, capacity: 1, refillPerSecond: 0 },
    });
    await expect(c.get("k", { signal: AbortSignal.timeout(50) })).rejects.toMatchObject({
      reason: "Aborted",
    });
    expect(v.requests).toHaveLength(1);
    // No jitter, no wait: the next call's retry goes at once, on the one token there is.
    jitter = 0;
    v.script(UNAVAILABLE, { status: 200, body: { key: "k", value: 1, version: 1 } });
    await expect(c.get("k")).resolves.toMatchObject({ version: 1 });
    expect(v.requests).toHaveLength(3);
  });

  it("waits out a Retry-After longer than one timer can hold", async () => {
    // 2^31 ms and a little: one setTimeout of it would fire after 1 ms, and ask again at once.
    const v = await voter(
      {
        status: 429,
        headers: { "retry-after": "2147484" },
        body: errorBody("ResourceExhausted", "CommandCount", { governor: "command", lane: "data" }),
      },
      OK_PUT,
    );
    const c = client([v.url], { deadlineMs: 2 ** 40, random: () => 0 });
    await expect(c.put("k", 1, { signal: AbortSignal.timeout(150) })).rejects.toMatchObject({
      name: "ConnectionError",
      reason: "Aborted",
    });
    expect(v.requests).toHaveLength(1);
  });

  it("never asks again at once after a Retry-After too long to count", async () => {
    const v = await voter(
      {
        status: 429,
        headers: { "retry-after": "9".repeat(400) },
        body: errorBody("ResourceExhausted", "CommandCount", { governor: "command", lane: "data" }),
      },
      OK_PUT,
    );
    const error = await client([v.url], { random: () => 0 })
      .put("k", 1)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResourceExhaustedError);
    expect(v.requests).toHaveLength(1);
  });

  it("aborts a call waiting to retry", async () => {
    const v = await voter(UNAVAILABLE);
    const controller = new AbortController();
    const call = client([v.url], { backoff: { initialMs: 5_000, maxMs: 5_000 }, random: () => 0.99 }).get(
      "k",
      {
        signal: controller.signal,
        endpoint: v.url,
      },
    );
    setTimeout(() => controller.abort(), 50);
    await expect(call).rejects.toMatchObject({ name: "ConnectionError", reason: "Aborted" });
  });

  it("reports a transport failure on every voter as ConnectionError, and a write's as UnknownWriteOutcome", async () => {
    const dead = await closedPort();
    const c = client([dead], { maxAttempts: 2 });
    const read = await c.get("k").catch((e: unknown) => e);
    expect(read).toBeInstanceOf(ConnectionError);
    expect(read).toMatchObject({ reason: "ConnectFailed", endpoint: dead, mayHaveReachedVoter: false });
    // Connection refused: the write never left, so it is not ambiguous.
    await expect(c.put("k", 1, { commandId: "cmd-c" })).rejects.toMatchObject({
      name: "ConnectionError",
      commandId: "cmd-c",
    });
    const v = await voter({ status: 200, cutBody: true });
    await expect(
      client([v.url], { maxAttempts: 2 }).put("k", 1, { commandId: "cmd-i" }),
    ).rejects.toMatchObject({
      name: "UnknownWriteOutcomeError",
      commandId: "cmd-i",
    });
  });

  it("asks an ops route of one voter, once: health without the key, metrics and the API document with it", async () => {
    const v = await voter({ status: 503, body: errorBody("Unavailable", "NotReady") });
    await expect(client([v.url]).ready()).rejects.toMatchObject({ reason: "NotReady" });
    expect(v.requests).toHaveLength(1);
    expect(v.requests[0]!.headers.authorization).toBeUndefined();
    await expect(client([v.url]).metrics()).rejects.toMatchObject({ reason: "NotReady" });
    await expect(client([v.url]).openApi()).rejects.toMatchObject({ reason: "NotReady" });
    expect(v.requests.slice(1).map((r) => r.headers.authorization)).toEqual(["Bearer key-1", "Bearer key-1"]);
  });

  it("turns a success it cannot read into InternalError", async () => {
    const v = await voter({ status: 200, body: "not json" });
    await expect(client([v.url]).get("k")).rejects.toBeInstanceOf(InternalError);
  });

  it("binds the command ID to a write refused before it is sent", async () => {
    const error = await client(["http://127.0.0.1:1"])
      .put("k", 1, { commandId: "cmd-pin", endpoint: "ftp://x" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).toMatchObject({ reason: "InvalidClientOption", commandId: "cmd-pin" });
    const generated = await client(["http://127.0.0.1:1"])
      .delete("k", { endpoint: "not a url" })
      .catch((e: unknown) => e);
    expect(generated).toMatchObject({ commandId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7/) });
  });

  it("refuses options it cannot work with", () => {
    expect(() => new KeyLoadClient({ endpoints: [] })).toThrow(InvalidArgumentError);
    expect(() => new KeyLoadClient({ endpoints: ["ftp://x"] })).toThrow(InvalidArgumentError);
    expect(() => new KeyLoadClient({ endpoints: ["http://x"], maxAttempts: 0 })).toThrow(/maxAttempts/);
    expect(() => new KeyLoadClient({ endpoints: ["http://x"], adaptiveThrottle: { buckets: 1.5 } })).toThrow(
      InvalidArgumentError,
    );
  });
});
