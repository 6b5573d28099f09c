import { setTimeout as sleep } from "node:timers/promises";
import type { TestCluster } from "@keyload/apphost/testing";
import {
  type CommandOutcome,
  ConnectionError,
  FailedPreconditionError,
  type KeyLoadClient,
  NotFoundError,
  ResourceExhaustedError,
  UnavailableError,
  UnknownWriteOutcomeError,
} from "@keyload/client";
import { expect } from "vitest";
import {
  type FinalDocument,
  type ReadOp,
  type RegisterOp,
  registerViolations,
  type WriteOp,
  type WriteOutcome,
} from "./register-history.js";
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
  /** Catalog keys `k0..k<keys-1>`, which every writer writes. */
  readonly keys: number;
  /** Writers of random keys through random voters, half their writes conditional on a read before. */
  readonly writers: number;
  /** Readers of random keys through random voters. */
  readonly readers: number;
  /** Whether voter `i` (of `cluster.voters`) can be sent to now (a killed one cannot); any by default. */
  readonly reachable?: (i: number) => boolean;
}

/**
 * Registers over the catalog, written and read through every voter while a test injects faults, and
 * the checks that make them a linearizability test (register-history.ts):
 * - a write's answer is right or transient (429, 503, 504, no answer), or FailedPrecondition for a
 *   conditional one, never another error; a read's, the document, NotFound or transient;
 * - once the faults stop, each command's durable outcome and each key's document on every voter:
 *   every acknowledged write committed at the version it was answered, a refused one did not commit,
 *   a key's versions count the commands that committed to it (a retried command applied once), every
 *   voter holds the same documents, and the order the versions give every write and every read agrees
 *   with real time (so no voter answered a stale read, through a new leader or an old one).
 * Each request goes to one voter, once (the client neither retries nor fails over): the workload
 * picks the voter and retries a write under its command ID itself.
 */
export class RegisterWorkload {
  private readonly history: RegisterOp[] = [];
  private readonly urls: readonly string[];
  private readonly client: KeyLoadClient;
  private next = 0;
  private running = true;
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
      ...Array.from({ length: options.readers }, (_, r) => this.readLoop(r)),
    ].map((loop) =>
      loop.catch((error: unknown) => {
        // The first unexpected answer ends the workload; stop() reports it.
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
    await workload.verify();
  }

  /** Ends the writers and readers; throws the first unexpected answer among them. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    if (this.failure) throw this.failure.error;
  }

  /** The checks once the cluster is whole and quiet again. */
  async verify(): Promise<void> {
    const ops = this.history;
    // The workload did what the checks need: reads that found a document, and conditional writes that
    // committed.
    expect(ops.some((op) => op.kind === "read" && op.seen !== "absent")).toBe(true);
    expect(
      ops.some(
        (op) => op.kind === "write" && op.expectedVersion !== undefined && typeof op.answer === "object",
      ),
    ).toBe(true);
    const verifier = this.cluster.client(this.cluster.adminKey, { adaptiveThrottle: false });
    // Below the shipped limit of eight HTTP requests in flight per principal.
    const outcomes = await mapLimit(
      range(this.next),
      6,
      async (n) => [n, await outcomeOf(verifier, n)] as const,
    );
    const finals = new Map<string, FinalDocument>();
    for (let k = 0; k < this.options.keys; k++) {
      const key = `k${k}`;
      const docs = await Promise.all(this.urls.map((endpoint) => documentAt(verifier, key, endpoint)));
      for (const doc of docs) expect(doc, `${key} on every voter`).toEqual(docs[0]);
      if (docs[0] !== undefined) finals.set(key, docs[0]);
    }
    const violations = registerViolations(ops, new Map(outcomes), finals);
    expect(violations, `not linearizable:\n${violations.join("\n")}`).toEqual([]);
  }

  private target(random: SeededRandom): number | null {
    const i = random.nextInt(this.urls.length);
    return (this.options.reachable?.(i) ?? true) ? i : null;
  }

  /** A reachable voter's index, waiting while none of those `random` picks is. */
  private async voter(random: SeededRandom): Promise<number | undefined> {
    while (this.running) {
      const i = this.target(random);
      if (i !== null) return i;
      await sleep(5);
    }
    return undefined;
  }

  private async write(w: number): Promise<void> {
    // Each writer has its own sequence of voters and keys, so writes go to leader and followers alike.
    const random = new SeededRandom(w + 1);
    while (this.running) {
      const key = `k${random.nextInt(this.options.keys)}`;
      let expectedVersion: number | undefined;
      if (random.nextInt(2) === 0) {
        const read = await this.read(key, random);
        if (read === undefined) continue;
        expectedVersion = read.seen === "absent" ? 0 : read.seen.version;
      }
      const n = this.next++;
      const op: WriteOp = {
        kind: "write",
        key,
        n,
        start: performance.now(),
        ...(expectedVersion === undefined ? {} : { expectedVersion }),
      };
      this.history.push(op);
      for (let attempt = 0; attempt < MAX_ATTEMPTS && this.running; attempt++) {
        const i = await this.voter(random);
        if (i === undefined) break;
        try {
          const { version } = await this.client.put(key, n, {
            commandId: `c${n}`,
            endpoint: this.urls[i]!,
            expectedVersion,
          });
          op.answer = { version };
        } catch (error) {
          if (expectedVersion !== undefined && error instanceof FailedPreconditionError) {
            op.answer = "failed-precondition";
          } else {
            expect(isTransient(error), `the answer to write c${n}: ${explain(error)}`).toBe(true);
            await sleep(20);
            continue;
          }
        }
        op.end = performance.now();
        break;
      }
    }
  }

  private async readLoop(r: number): Promise<void> {
    const random = new SeededRandom(1000 + r);
    while (this.running) await this.read(`k${random.nextInt(this.options.keys)}`, random);
  }

  /** One read of `key` through a voter `random` picks, recorded if answered. */
  private async read(key: string, random: SeededRandom): Promise<ReadOp | undefined> {
    const i = await this.voter(random);
    if (i === undefined) return undefined;
    const start = performance.now();
    let seen: ReadOp["seen"];
    try {
      const doc = await this.client.get<number>(key, { endpoint: this.urls[i]! });
      seen = { value: doc.value, version: doc.version };
    } catch (error) {
      if (!(error instanceof NotFoundError)) {
        expect(isTransient(error), `the answer to a read: ${explain(error)}`).toBe(true);
        await sleep(20);
        return undefined;
      }
      seen = "absent";
    }
    const op: ReadOp = { kind: "read", key, start, end: performance.now(), seen, via: `voter${i + 1}` };
    this.history.push(op);
    return op;
  }
}

/** A command's durable outcome, as the history check reads it. */
async function outcomeOf(client: KeyLoadClient, n: number): Promise<WriteOutcome> {
  let outcome: CommandOutcome;
  try {
    outcome = await client.getCommand(`c${n}`);
  } catch (error) {
    // Never committed: the only other answer once the cluster is whole.
    if (error instanceof NotFoundError) return { status: "none" };
    throw error;
  }
  if (outcome.status === "committed") {
    const { key, version } = outcome.result as { key: string; version: number };
    return { status: "committed", key, version };
  }
  expect(outcome.status, `the outcome of c${n}`).toBe("failed");
  return { status: "failed", code: outcome.error?.code ?? "none" };
}

async function documentAt(
  client: KeyLoadClient,
  key: string,
  endpoint: string,
): Promise<FinalDocument | undefined> {
  try {
    const { value, version } = await client.get<number>(key, { endpoint });
    return { value, version };
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
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
