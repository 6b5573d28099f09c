import { setTimeout as sleep } from "node:timers/promises";
import type { TestCluster } from "@keyload/apphost/testing";
import { FailedPreconditionError, type KeyLoadClient, NotFoundError } from "@keyload/client";
import { expect } from "vitest";
import { durableOutcome, FaultWorkload, type FaultWorkloadOptions, mapLimit } from "./fault-workload.js";
import {
  type FinalDocument,
  type ReadOp,
  type RegisterOp,
  registerViolations,
  type WriteOp,
  type WriteOutcome,
} from "./register-history.js";
import { SeededRandom } from "./seeded-random.js";

export interface RegisterWorkloadOptions extends FaultWorkloadOptions {
  /** Catalog keys `k0..k<keys-1>`, which every writer writes. */
  readonly keys: number;
  /** Writers of random keys through random voters, half their writes conditional on a read before. */
  readonly writers: number;
  /** Readers of random keys through random voters. */
  readonly readers: number;
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
 */
export class RegisterWorkload extends FaultWorkload {
  private readonly history: RegisterOp[] = [];
  private next = 0;

  constructor(
    cluster: TestCluster,
    private readonly options: RegisterWorkloadOptions,
  ) {
    super(cluster, options);
    this.start([
      ...Array.from({ length: options.writers }, (_, w) => this.write(w)),
      ...Array.from({ length: options.readers }, (_, r) => this.readLoop(r)),
    ]);
  }

  static run(
    cluster: TestCluster,
    options: RegisterWorkloadOptions,
    faults: () => Promise<void>,
  ): Promise<void> {
    return FaultWorkload.around(new RegisterWorkload(cluster, options), faults);
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
      Array.from({ length: this.next }, (_, n) => n),
      6,
      async (n) => [n, await outcomeOf(verifier, n)] as const,
    );
    const finals = new Map<string, FinalDocument>();
    for (let k = 0; k < this.options.keys; k++) {
      const key = `k${k}`;
      const docs = await Promise.all(this.cluster.voters.map((v) => documentAt(verifier, key, v.httpUrl)));
      for (const doc of docs) expect(doc, `${key} on every voter`).toEqual(docs[0]);
      if (docs[0] !== undefined) finals.set(key, docs[0]);
    }
    const violations = registerViolations(ops, new Map(outcomes), finals);
    expect(violations, `not linearizable:\n${violations.join("\n")}`).toEqual([]);
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
      op.answer = await this.command<WriteOp["answer"] & {}>(
        random,
        `write c${n}`,
        async (endpoint) => {
          const { version } = await this.client.put(key, n, {
            commandId: `c${n}`,
            endpoint,
            expectedVersion,
          });
          return { version };
        },
        (error) =>
          expectedVersion !== undefined && error instanceof FailedPreconditionError
            ? ("failed-precondition" as const)
            : undefined,
      );
      if (op.answer !== undefined) op.end = performance.now();
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
      const doc = await this.client.get<number>(key, { endpoint: this.endpoint(i) });
      seen = { value: doc.value, version: doc.version };
    } catch (error) {
      if (!(error instanceof NotFoundError)) {
        this.expectTransient(error, `a read of ${key}`);
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

/** What a command's durable outcome says of the key and version it wrote. */
async function outcomeOf(client: KeyLoadClient, n: number): Promise<WriteOutcome> {
  const outcome = await durableOutcome(client, `c${n}`);
  if (outcome.status !== "committed") return outcome;
  const { key, version } = outcome.result as { key: string; version: number };
  return { status: "committed", key, version };
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
