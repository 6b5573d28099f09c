import { setTimeout as sleep } from "node:timers/promises";
import type { TestCluster } from "@keyload/apphost/testing";
import {
  ConnectionError,
  type KeyLoadClient,
  LeaseLostError,
  NotFoundError,
  ResourceExhaustedError,
  UnavailableError,
  UnknownWriteOutcomeError,
} from "@keyload/client";
import { expect } from "vitest";
import type { SeededRandom } from "./seeded-random.js";

/** Attempts per command ID: an unknown outcome is retried with the same ID, as the contract says. */
const MAX_ATTEMPTS = 5;
/** How long a drain after the faults may take; the checks report what it left. */
const DRAIN_MS = 30_000;

/**
 * What a fault may answer: admission refused (429), no leader or quorum (503), outcome unknown (504),
 * or no answer at all (the voter died, or the request timed out).
 */
function isTransient(error: unknown): boolean {
  return (
    error instanceof ResourceExhaustedError ||
    error instanceof UnavailableError ||
    error instanceof UnknownWriteOutcomeError ||
    error instanceof ConnectionError
  );
}

export interface FaultWorkloadOptions {
  /** Whether voter `i` (of `cluster.voters`) can be sent to now (a killed one cannot); any by default. */
  readonly reachable?: (i: number) => boolean;
}

/**
 * A workload run through every voter while a test injects faults, checked once they stop: its loops
 * send each request to one voter, once (the client neither retries nor fails over), pick the voter
 * themselves and retry a command under its ID while its outcome is unknown. The first unexpected
 * answer ends the workload, and `stop` throws it.
 */
export abstract class FaultWorkload {
  protected readonly client: KeyLoadClient;
  protected running = true;
  private readonly urls: readonly string[];
  private failure: { readonly error: unknown } | undefined;
  private loops: Promise<void>[] = [];
  private nextCommand = 0;

  constructor(
    protected readonly cluster: TestCluster,
    private readonly faultOptions: FaultWorkloadOptions,
  ) {
    this.urls = cluster.voters.map((v) => v.httpUrl);
    this.client = cluster.client(cluster.adminKey, { maxAttempts: 1, adaptiveThrottle: false });
  }

  /**
   * Runs `workload` while `faults` runs, then, with every voter ready again, makes its checks: the
   * usual shape of a fault test.
   */
  static async around(workload: FaultWorkload, faults: () => Promise<void>): Promise<void> {
    try {
      await faults();
    } finally {
      await workload.stop();
    }
    await workload.cluster.waitForReady(30_000);
    await workload.verify();
  }

  /** The checks once the cluster is whole and quiet again. */
  abstract verify(): Promise<void>;

  /** Ends the loops; throws the first unexpected answer among them. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    if (this.failure) throw this.failure.error;
  }

  protected start(loops: readonly Promise<void>[]): void {
    this.loops = loops.map((loop) =>
      loop.catch((error: unknown) => {
        this.failure ??= { error };
        this.running = false;
      }),
    );
  }

  /** A reachable voter's index, waiting while none of those `random` picks is; undefined once stopped. */
  protected async voter(random: SeededRandom): Promise<number | undefined> {
    while (this.running) {
      const i = random.nextInt(this.urls.length);
      if (this.faultOptions.reachable?.(i) ?? true) return i;
      await sleep(5);
    }
    return undefined;
  }

  /** A command ID no other command of the workload has, `prefix` saying what it is for. */
  protected commandId(prefix: string): string {
    return `${prefix}${this.nextCommand++}`;
  }

  /**
   * Calls `take` until it has found nothing twice, `pauseMs` apart (what a consumer abandoned during the
   * faults has lapsed by then, and been taken), or the drain's time is up.
   */
  protected async drain(take: () => Promise<boolean>, pauseMs: number): Promise<void> {
    const deadline = performance.now() + DRAIN_MS;
    for (let empty = 0; empty < 2 && performance.now() < deadline; ) {
      if (await take()) {
        empty = 0;
      } else {
        empty++;
        await sleep(pauseMs);
      }
    }
  }

  protected endpoint(i: number): string {
    return this.urls[i]!;
  }

  /**
   * Sends one command through voters `random` picks, under one ID, until an attempt is answered or the
   * attempts run out (undefined). `settled` turns an answered refusal into a result, and returns
   * undefined for any other error, which must then be transient.
   */
  protected async command<T>(
    random: SeededRandom,
    what: string,
    send: (endpoint: string) => Promise<T>,
    settled: (error: unknown) => T | undefined = () => undefined,
  ): Promise<T | undefined> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS && this.running; attempt++) {
      const i = await this.voter(random);
      if (i === undefined) break;
      try {
        return await send(this.endpoint(i));
      } catch (error) {
        const answer = settled(error);
        if (answer !== undefined) return answer;
        this.expectTransient(error, what);
        await sleep(20);
      }
    }
    return undefined;
  }

  /**
   * Sends an acknowledgement under a lease (a queue message's, a subscription delivery's) as `command`
   * sends a command: acked, refused LeaseLost (the lease had lapsed or was taken again), or undefined
   * when no attempt was answered.
   */
  protected acknowledge(
    random: SeededRandom,
    what: string,
    send: (endpoint: string) => Promise<unknown>,
  ): Promise<"acked" | "lease-lost" | undefined> {
    return this.command(
      random,
      what,
      (endpoint) => send(endpoint).then(() => "acked" as const),
      (error) => (error instanceof LeaseLostError ? ("lease-lost" as const) : undefined),
    );
  }

  protected expectTransient(error: unknown, what: string): void {
    const explained = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    expect(isTransient(error), `the answer to ${what}: ${explained}`).toBe(true);
  }
}

/** Runs `fn` over `items` with at most `limit` in flight, results in order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/** A command's durable outcome once the faults are over, as the history checks read it. */
export type DurableOutcome =
  | { readonly status: "committed"; readonly result: unknown }
  | { readonly status: "failed"; readonly code: string }
  | { readonly status: "none" };

export async function durableOutcome(client: KeyLoadClient, commandId: string): Promise<DurableOutcome> {
  try {
    const outcome = await client.getCommand(commandId);
    if (outcome.status === "committed") return { status: "committed", result: outcome.result };
    // Expired outcomes keep no result: a test's run ends well within the outcome window.
    expect(outcome.status, `the outcome of ${commandId}`).toBe("failed");
    return { status: "failed", code: outcome.error?.code ?? "none" };
  } catch (error) {
    // Never committed: the only other answer once the cluster is whole.
    if (error instanceof NotFoundError) return { status: "none" };
    throw error;
  }
}
