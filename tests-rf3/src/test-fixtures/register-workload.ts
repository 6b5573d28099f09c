import { setTimeout as sleep } from "node:timers/promises";
import type { TestCluster } from "@keyload/apphost/testing";
import {
  type CommandOutcome,
  ConnectionError,
  type Document,
  type KeyLoadClient,
  NotFoundError,
  ResourceExhaustedError,
  UnavailableError,
  UnknownWriteOutcomeError,
} from "@keyload/client";
import { expect } from "vitest";
import { SeededRandom } from "./seeded-random.js";

/** Attempts per command ID: an unknown outcome is retried with the same ID, as the contract says. */
const MAX_ATTEMPTS = 5;

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

function explain(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

export interface RegisterWorkloadOptions {
  /** Writers, each the only writer of its own key `k<w>`. */
  readonly writers: number;
  /** Readers of random keys through random voters. */
  readonly readers: number;
  /** Whether voter `i` (of `cluster.voters`) can be sent to now (a killed one cannot); any by default. */
  readonly reachable?: (i: number) => boolean;
}

/**
 * Single-writer registers over the catalog, written and read through every voter while a test
 * injects faults, and the checks that make them a linearizability test:
 * - a write's answer is either right or transient (429, 503, 504, no answer), never another error;
 * - each acknowledged write of a key answers a higher version than the one before;
 * - a read that began after a write was acknowledged sees that write or a later one, through any
 *   voter (an old leader cut off from the others must not answer from its own state);
 * - once the faults stop: every acknowledged write committed, a key's version counts the commands
 *   that committed to it (a retried command applied once), and every voter holds the same documents.
 * Each request goes to one voter, once (the client neither retries nor fails over): the workload
 * picks the voter and retries a write under its command ID itself.
 */
export class RegisterWorkload {
  /** key -> the last acknowledged write's value and version. */
  private readonly acked = new Map<string, { value: number; version: number }>();
  private readonly urls: readonly string[];
  private readonly client: KeyLoadClient;
  private next = 0;
  private running = true;
  private reads = 0;
  private failure: { readonly error: unknown } | undefined;
  private readonly loops: Promise<void>[];

  constructor(
    private readonly cluster: TestCluster,
    private readonly options: RegisterWorkloadOptions,
  ) {
    this.urls = cluster.voters.map((v) => v.httpUrl);
    this.client = cluster.client(cluster.adminKey, { maxAttempts: 1, adaptiveThrottle: false });
    this.loops = [
      ...Array.from({ length: options.writers }, (_, w) => this.write(w)),
      ...Array.from({ length: options.readers }, (_, r) => this.read(r)),
    ].map((loop) =>
      loop.catch((error: unknown) => {
        // The first failed check ends the workload; stop() reports it.
        this.failure ??= { error };
        this.running = false;
      }),
    );
  }

  /**
   * Runs the workload while `faults` runs, then, with every voter ready again, makes every check: the
   * usual shape of a fault test.
   */
  static async around(
    cluster: TestCluster,
    options: RegisterWorkloadOptions,
    faults: () => Promise<void>,
  ): Promise<void> {
    const workload = new RegisterWorkload(cluster, options);
    try {
      await faults();
    } finally {
      await workload.stop();
    }
    await cluster.waitForReady(30_000);
    expect(workload.reads).toBeGreaterThan(0);
    await workload.verifyConverged();
  }

  /** Ends the writers and readers; throws the first failed check among them. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    if (this.failure) throw this.failure.error;
  }

  /** The checks once the cluster is whole and quiet again. */
  async verifyConverged(): Promise<void> {
    expect(this.acked.size).toBe(this.options.writers);
    const verifier = this.cluster.client(this.cluster.adminKey, { adaptiveThrottle: false });
    // Below the shipped limit of eight HTTP requests in flight per principal.
    const outcomes = await mapLimit(range(this.next), 6, async (n): Promise<CommandOutcome | undefined> => {
      try {
        return await verifier.getCommand(`c${n}`);
      } catch (error) {
        // Never committed: the only other answer once the cluster is whole.
        if (error instanceof NotFoundError) return undefined;
        throw error;
      }
    });
    const committed = new Map<string, number>();
    for (const outcome of outcomes) {
      const key = (outcome?.status === "committed" ? (outcome.result as { key?: string }) : {}).key;
      if (key !== undefined) committed.set(key, (committed.get(key) ?? 0) + 1);
    }
    for (const [key, { value }] of this.acked) {
      expect(outcomes[value], `the outcome of acknowledged write c${value}`).toMatchObject({
        status: "committed",
      });
      const docs = await Promise.all(this.urls.map((endpoint) => verifier.get<number>(key, { endpoint })));
      for (const doc of docs) {
        // A later unacknowledged write may have committed too, never an earlier value.
        expect(doc.value).toBeGreaterThanOrEqual(value);
        expect(doc).toEqual(docs[0]);
      }
      expect(docs[0]!.version, `the version of ${key}`).toBe(committed.get(key));
    }
  }

  private target(random: SeededRandom): number | null {
    const i = random.nextInt(this.urls.length);
    return (this.options.reachable?.(i) ?? true) ? i : null;
  }

  private async write(w: number): Promise<void> {
    const key = `k${w}`;
    // Each writer has its own sequence of voters, so writes go to leader and followers alike.
    const random = new SeededRandom(w + 1);
    while (this.running) {
      const n = this.next++;
      for (let attempt = 0; attempt < MAX_ATTEMPTS && this.running; ) {
        const i = this.target(random);
        if (i === null) {
          await sleep(5);
          continue;
        }
        attempt++;
        let version: number;
        try {
          ({ version } = await this.client.put(key, n, { commandId: `c${n}`, endpoint: this.urls[i]! }));
        } catch (error) {
          expect(isTransient(error), `the answer to write c${n}: ${explain(error)}`).toBe(true);
          await sleep(20);
          continue;
        }
        // One writer per key, one write at a time: each acknowledged write lands above the last.
        expect(version, `the version write c${n} of ${key} answered`).toBeGreaterThan(
          this.acked.get(key)?.version ?? 0,
        );
        this.acked.set(key, { value: n, version });
        break;
      }
    }
  }

  private async read(r: number): Promise<void> {
    const random = new SeededRandom(1000 + r);
    while (this.running) {
      const i = this.target(random);
      if (i === null) {
        await sleep(5);
        continue;
      }
      const key = `k${random.nextInt(this.options.writers)}`;
      const floor = this.acked.get(key)?.value;
      let doc: Document<number>;
      try {
        doc = await this.client.get<number>(key, { endpoint: this.urls[i]! });
      } catch (error) {
        if (error instanceof NotFoundError) {
          expect(floor, `a read of ${key} through voter${i + 1} found nothing`).toBeUndefined();
        } else {
          expect(isTransient(error), `the answer to a read: ${explain(error)}`).toBe(true);
          await sleep(20);
        }
        continue;
      }
      this.reads++;
      const stale = `a read of ${key} through voter${i + 1}, begun after value ${floor} was acknowledged`;
      if (floor !== undefined) expect(doc.value, stale).toBeGreaterThanOrEqual(floor);
    }
  }
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/** Runs `fn` over `items` with at most `limit` in flight, results in order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
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
