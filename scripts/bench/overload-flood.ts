/**
 * The flood: many connections each keeping one write outstanding for a fixed time. Two clients:
 *
 * - immediate retry, the worst client: one undici `Client` (one keep-alive connection) per connection,
 *   which resends a refused write (429, or etcd's refusals) the moment the refusal arrives, with the
 *   same command ID, and sends the next write the moment one is acknowledged;
 * - `KeyLoadClient`, the library's own behaviour: its retries after `Retry-After`, its retry budget and
 *   its adaptive throttle, one client per principal, under an application that does what its
 *   `ResourceExhaustedError` says: a caller whose write the client gave up on after a refusal sends
 *   the next one after the error's `retryAfter` (after a local throttle rejection, which carries none,
 *   after the client's first backoff step, so that a rejection that costs nothing does not spin this
 *   process).
 */
import { setMaxListeners } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
// @keyload/scripts does not depend on @keyload/client; its source is imported directly.
import { CLIENT_DEFAULTS, KeyLoadClient, KeyLoadClientError } from "@keyload/client";
import { Client, type Dispatcher } from "undici";

export interface FloodWrite {
  readonly method: Dispatcher.HttpMethod;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

export interface FloodResult {
  readonly seconds: number;
  /** Writes acknowledged (2xx) within the phase. */
  readonly acked: number;
  /** Milliseconds from the first attempt of a write to its acknowledgement, sorted. */
  readonly latencies: readonly number[];
  /** Refusals the flooding client saw, by reason (the 429 body's `error.reason`, or etcd's message). */
  readonly refusals: Record<string, number>;
  /** Other failures, by kind. */
  readonly errors: Record<string, number>;
}

/** What a flood did, its latencies sorted; it lasted `seconds` unless it stopped early. */
function floodResult(
  seconds: number,
  start: number,
  acked: number,
  latencies: number[],
  refusals: FloodResult["refusals"],
  errors: FloodResult["errors"],
): FloodResult {
  latencies.sort((a, b) => a - b);
  return {
    seconds: Math.min(seconds, (performance.now() - start) / 1000),
    acked,
    latencies,
    refusals,
    errors,
  };
}

export interface ImmediateFloodSpec {
  readonly origins: readonly string[];
  readonly connections: number;
  readonly seconds: number;
  /** The `seq`-th write of connection `connection`: a retry is the same write sent again. */
  write(connection: number, seq: number): FloodWrite;
  /** The refusal reason of an answer that refused (retried at once), or undefined for another failure. */
  refusal(status: number, body: string): string | undefined;
  readonly signal?: AbortSignal;
}

const tally = (counts: Record<string, number>, key: string): void => {
  counts[key] = (counts[key] ?? 0) + 1;
};

export async function runImmediateFlood(spec: ImmediateFloodSpec): Promise<FloodResult> {
  const clients = Array.from(
    { length: spec.connections },
    (_, i) =>
      new Client(spec.origins[i % spec.origins.length]!, {
        pipelining: 1,
        keepAliveTimeout: 60_000,
        headersTimeout: 60_000,
        bodyTimeout: 60_000,
      }),
  );
  const latencies: number[] = [];
  const refusals: Record<string, number> = {};
  const errors: Record<string, number> = {};
  let acked = 0;
  const start = performance.now();
  const end = start + spec.seconds * 1000;
  const going = (): boolean => performance.now() < end && !spec.signal?.aborted;

  const connection = async (index: number): Promise<void> => {
    const client = clients[index]!;
    for (let seq = 0; going(); seq++) {
      const write = spec.write(index, seq);
      const first = performance.now();
      for (;;) {
        let retry = false;
        try {
          const response = await client.request({ ...write });
          if (response.statusCode >= 200 && response.statusCode < 300) {
            await response.body.dump();
            if (performance.now() <= end) {
              acked++;
              latencies.push(performance.now() - first);
            }
          } else {
            const text = await response.body.text();
            const reason = spec.refusal(response.statusCode, text);
            if (reason !== undefined) {
              tally(refusals, reason);
              retry = true;
            } else {
              tally(errors, `HTTP ${response.statusCode} ${text.slice(0, 120)}`);
            }
          }
        } catch (err) {
          tally(errors, (err as { code?: string }).code ?? String(err));
          // A refused connection fails at once: do not spin.
          await sleep(10);
        }
        if (!retry || !going()) break;
      }
    }
  };

  try {
    await Promise.all(clients.map((_, i) => connection(i)));
  } finally {
    await Promise.allSettled(clients.map((c) => c.destroy()));
  }
  return floodResult(spec.seconds, start, acked, latencies, refusals, errors);
}

export interface ClientFloodSpec {
  /** Leader first: the client asks the first endpoint first. */
  readonly endpoints: readonly string[];
  /** One API key per principal; connection i writes as principal i mod their number. */
  readonly apiKeys: readonly string[];
  readonly connections: number;
  readonly seconds: number;
  key(connection: number, seq: number): string;
  /** The value of the `seq`-th write of `connection`. */
  value(connection: number, seq: number): string;
  readonly signal?: AbortSignal;
}

export async function runClientFlood(spec: ClientFloodSpec): Promise<FloodResult> {
  const perPrincipal = Math.ceil(spec.connections / spec.apiKeys.length);
  const clients = spec.apiKeys.map(
    (apiKey) => new KeyLoadClient({ endpoints: spec.endpoints, apiKey, connections: perPrincipal }),
  );
  const latencies: number[] = [];
  const refusals: Record<string, number> = {};
  const errors: Record<string, number> = {};
  let acked = 0;
  const start = performance.now();
  const end = start + spec.seconds * 1000;
  const stop = new AbortController();
  // Every call in flight listens on it.
  setMaxListeners(spec.connections * 2 + 10, stop.signal);
  const timer = setTimeout(() => stop.abort(), spec.seconds * 1000);
  const onAbort = (): void => stop.abort();
  spec.signal?.addEventListener("abort", onAbort);

  const connection = async (index: number): Promise<void> => {
    const client = clients[index % clients.length]!;
    for (let seq = 0; !stop.signal.aborted; seq++) {
      const first = performance.now();
      try {
        await client.put(spec.key(index, seq), spec.value(index, seq), { signal: stop.signal });
        if (performance.now() <= end) {
          acked++;
          latencies.push(performance.now() - first);
        }
      } catch (err) {
        if (stop.signal.aborted) break;
        if (err instanceof KeyLoadClientError && err.code === "ResourceExhausted") {
          // The 429s the voters sent are counted by the voters; these are the calls the client gave up on.
          tally(refusals, `gave up: ${err.reason ?? "?"}`);
          await sleep(Math.max(err.retryAfter ?? 0, CLIENT_DEFAULTS.backoff.initialMs), undefined, {
            signal: stop.signal,
          }).catch(() => undefined);
        } else {
          tally(errors, err instanceof KeyLoadClientError ? `${err.code} ${err.reason ?? ""}` : String(err));
          await sleep(10);
        }
      }
    }
  };

  try {
    await Promise.all(Array.from({ length: spec.connections }, (_, i) => connection(i)));
  } finally {
    clearTimeout(timer);
    spec.signal?.removeEventListener("abort", onAbort);
    await Promise.allSettled(clients.map((c) => c.close()));
  }
  return floodResult(spec.seconds, start, acked, latencies, refusals, errors);
}
