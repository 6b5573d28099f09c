import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "vitest";
import { SeededRandom } from "../../raft/seeded-random.js";
import { call, type HttpAnswer } from "./voter-cluster.js";
import { waitFor200 } from "./voter-process.js";

/** Admission refused, no leader or quorum, outcome unknown: what a fault may answer. */
const TRANSIENT = [429, 503, 504];
/** Attempts per command ID: an unknown outcome is retried with the same ID, as the contract says. */
const MAX_ATTEMPTS = 5;

export interface RegisterWorkloadOptions {
  /** Writers, each the only writer of its own key `k<w>`. */
  readonly writers: number;
  /** Readers of random keys through random voters. */
  readonly readers: number;
  /** Whether voter `i` can be sent to now (a killed one cannot); every voter by default. */
  readonly reachable?: (i: number) => boolean;
}

/**
 * Single-writer registers over the catalog, written and read through every voter while a test
 * injects faults, and the checks that make them a linearizability test:
 * - a write's answer is either right or transient (429, 503, 504), never another error;
 * - each acknowledged write of a key answers a higher version than the one before;
 * - a read that began after a write was acknowledged sees that write or a later one, through any
 *   voter (an old leader cut off from the others must not answer from its own state);
 * - once the faults stop: every acknowledged write committed, a key's version counts the commands
 *   that committed to it (a retried command applied once), and every voter holds the same documents.
 */
export class RegisterWorkload {
  /** key -> the last acknowledged write's value and version. */
  readonly acked = new Map<string, { value: number; version: number }>();
  private next = 0;
  private running = true;
  private readonly loops: Promise<void>[];
  private reads = 0;

  constructor(
    private readonly urls: readonly string[],
    private readonly options: RegisterWorkloadOptions,
  ) {
    this.loops = [
      ...Array.from({ length: options.writers }, (_, w) => this.write(w)),
      ...Array.from({ length: options.readers }, (_, r) => this.read(r)),
    ];
  }

  /**
   * Runs the workload through `urls` while `faults` runs, then, with every voter ready again, makes
   * every check: the usual shape of a fault test.
   */
  static async around(
    urls: readonly string[],
    options: RegisterWorkloadOptions,
    faults: () => Promise<void>,
  ): Promise<void> {
    const workload = new RegisterWorkload(urls, options);
    try {
      await faults();
    } finally {
      await workload.stop();
    }
    await Promise.all(urls.map((url) => waitFor200(`${url}/health/ready`)));
    expect(workload.reads).toBeGreaterThan(0);
    await workload.verifyConverged();
  }

  /** Ends the writers and readers; rejects with the first failed check among them. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /** The checks once the cluster is whole and quiet again. */
  async verifyConverged(): Promise<void> {
    expect(this.acked.size).toBe(this.options.writers);
    const url = this.urls[0]!;
    // Below the shipped limit of eight HTTP requests in flight per principal.
    const outcomes = await mapLimit(range(this.next), 6, (n) => call(url, "GET", `/v1/commands/c${n}`));
    const committed = new Map<string, number>();
    for (const o of outcomes) {
      // Committed, or never committed: no other answer once the cluster is whole.
      expect([200, 404]).toContain(o.status);
      const key = (o.body.result as { key?: string } | undefined)?.key;
      if (o.status === 200 && o.body.status === "committed" && key) {
        committed.set(key, (committed.get(key) ?? 0) + 1);
      }
    }
    for (const [key, { value }] of this.acked) {
      expect(outcomes[value]!.body).toMatchObject({ status: "committed" });
      const docs = await Promise.all(this.urls.map((u) => call(u, "GET", `/v1/catalog/${key}`)));
      for (const doc of docs) {
        expect(doc.status).toBe(200);
        // A later unacknowledged write may have committed too, never an earlier value.
        expect(doc.body.value as number).toBeGreaterThanOrEqual(value);
        expect(doc.body).toEqual(docs[0]!.body);
      }
      expect(docs[0]!.body.version).toBe(committed.get(key));
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
        let r: HttpAnswer;
        try {
          r = await call(this.urls[i]!, "PUT", `/v1/catalog/${key}`, {
            body: { value: n },
            commandId: `c${n}`,
          });
        } catch {
          // The voter died or the request timed out: the outcome is unknown.
          await sleep(20);
          continue;
        }
        if (r.status === 200) {
          const version = r.body.version as number;
          // One writer per key, one write at a time: each acknowledged write lands above the last.
          expect(version, `the version write c${n} of ${key} answered`).toBeGreaterThan(
            this.acked.get(key)?.version ?? 0,
          );
          this.acked.set(key, { value: n, version });
          break;
        }
        expect(TRANSIENT, `the answer to write c${n}: ${JSON.stringify(r.body)}`).toContain(r.status);
        await sleep(20);
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
      let answer: HttpAnswer;
      try {
        answer = await call(this.urls[i]!, "GET", `/v1/catalog/${key}`);
      } catch {
        await sleep(20);
        continue;
      }
      if (answer.status === 200) {
        this.reads++;
        const stale = `a read of ${key} through voter${i + 1}, begun after value ${floor} was acknowledged`;
        if (floor !== undefined) expect(answer.body.value as number, stale).toBeGreaterThanOrEqual(floor);
      } else if (answer.status === 404) {
        expect(floor, `a read of ${key} through voter${i + 1} found nothing`).toBeUndefined();
      } else {
        expect(TRANSIENT, `the answer to a read: ${JSON.stringify(answer.body)}`).toContain(answer.status);
        await sleep(20);
      }
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
