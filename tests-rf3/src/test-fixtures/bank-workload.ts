import { setTimeout as sleep } from "node:timers/promises";
import type { TestCluster } from "@keyload/apphost/testing";
import { FailedPreconditionError, type KeyLoadClient, type TransactionResult } from "@keyload/client";
import { expect } from "vitest";
import {
  type AccountsRead,
  type Bank,
  bankViolations,
  type TransferOp,
  type TransferOutcome,
} from "./bank-history.js";
import { durableOutcome, FaultWorkload, type FaultWorkloadOptions, mapLimit } from "./fault-workload.js";
import { SeededRandom } from "./seeded-random.js";

/** What each account holds before the first transfer. */
const OPENING = 100;
/** The largest amount one transfer moves. */
const MAX_AMOUNT = 10;

export interface BankWorkloadOptions extends FaultWorkloadOptions {
  /** Accounts `acct0..acct<accounts-1>`. */
  readonly accounts: number;
  /** Transferers, each reading two random accounts and moving an amount between them. */
  readonly transferers: number;
  /** Readers of every account at once, through random voters. */
  readonly readers: number;
}

/**
 * A bank over catalog keys, its transfers transactions conditional on the versions they read, run
 * through every voter while a test injects faults, and the checks of bank-history.ts once they stop.
 */
export class BankWorkload extends FaultWorkload {
  private readonly bank: Bank;
  private readonly transfers: TransferOp[] = [];
  private readonly reads: AccountsRead[] = [];

  constructor(cluster: TestCluster, options: BankWorkloadOptions) {
    super(cluster, options);
    this.bank = {
      accounts: Array.from({ length: options.accounts }, (_, i) => `acct${i}`),
      opening: OPENING,
    };
    this.start([
      ...Array.from({ length: options.transferers }, (_, t) => this.transfer(t)),
      ...Array.from({ length: options.readers }, (_, r) => this.audit(r)),
    ]);
  }

  /** Opens the accounts, then runs the transfers and reads while `faults` runs, and checks them. */
  static async run(
    cluster: TestCluster,
    options: BankWorkloadOptions,
    faults: () => Promise<void>,
  ): Promise<void> {
    const opener = cluster.client(cluster.adminKey, { adaptiveThrottle: false });
    const operations = Array.from({ length: options.accounts }, (_, i) => ({
      op: "put" as const,
      key: `acct${i}`,
      value: OPENING,
      expectedVersion: 0,
    }));
    await opener.transaction({ operations });
    return FaultWorkload.around(new BankWorkload(cluster, options), faults);
  }

  async verify(): Promise<void> {
    const verifier = this.cluster.client(this.cluster.adminKey, { adaptiveThrottle: false });
    const finals = await Promise.all(
      this.cluster.voters.map(async (voter) => {
        const { items } = await verifier.bulkGet<number>(this.bank.accounts, { endpoint: voter.httpUrl });
        return new Map(
          items.flatMap((item) =>
            item.found ? ([[item.key, { balance: item.value, version: item.version }]] as const) : [],
          ),
        );
      }),
    );
    expect(this.transfers.some((op) => op.answer === "committed")).toBe(true);
    expect(this.reads.some((read) => read.seen.size === this.bank.accounts.length)).toBe(true);
    // Below the shipped limit of eight HTTP requests in flight per principal.
    const outcomes = await mapLimit(
      this.transfers,
      6,
      async (op) => [op.n, await outcomeOf(verifier, op.n)] as const,
    );
    const violations = bankViolations(this.bank, this.transfers, this.reads, new Map(outcomes), finals[0]!);
    expect(violations, `the bank broke its promises:\n${violations.join("\n")}`).toEqual([]);
    for (const final of finals) expect([...final], "the accounts on every voter").toEqual([...finals[0]!]);
  }

  private async transfer(t: number): Promise<void> {
    const random = new SeededRandom(4000 + t);
    const { accounts } = this.bank;
    while (this.running) {
      const i = random.nextInt(accounts.length);
      const j = (i + 1 + random.nextInt(accounts.length - 1)) % accounts.length;
      const read = await this.read([accounts[i]!, accounts[j]!], random);
      if (read === undefined) continue;
      const from = read.seen.get(accounts[i]!);
      const to = read.seen.get(accounts[j]!);
      if (from === undefined || to === undefined) continue;
      const amount = Math.min(from.balance, 1 + random.nextInt(MAX_AMOUNT));
      if (amount === 0) continue;
      const n = this.transfers.length;
      const op: TransferOp = {
        n,
        writes: [
          { account: accounts[i]!, balance: from.balance - amount, expectedVersion: from.version },
          { account: accounts[j]!, balance: to.balance + amount, expectedVersion: to.version },
        ],
        start: performance.now(),
      };
      this.transfers.push(op);
      const operations = op.writes.map((w) => ({
        op: "put" as const,
        key: w.account,
        value: w.balance,
        expectedVersion: w.expectedVersion,
      }));
      op.answer = await this.command<TransferOp["answer"] & {}>(
        random,
        `transfer t${n}`,
        async (endpoint) => {
          await this.client.transaction({ operations }, { commandId: `t${n}`, endpoint });
          return "committed";
        },
        (error) => (error instanceof FailedPreconditionError ? "failed-precondition" : undefined),
      );
      if (op.answer !== undefined) op.end = performance.now();
    }
  }

  private async audit(r: number): Promise<void> {
    const random = new SeededRandom(5000 + r);
    while (this.running) await this.read(this.bank.accounts, random);
  }

  /** One read of `accounts` in one request, through a voter `random` picks, recorded if answered. */
  private async read(accounts: readonly string[], random: SeededRandom): Promise<AccountsRead | undefined> {
    const i = await this.voter(random);
    if (i === undefined) return undefined;
    const start = performance.now();
    let items: Awaited<ReturnType<KeyLoadClient["bulkGet"]>>["items"];
    try {
      ({ items } = await this.client.bulkGet<number>(accounts, { endpoint: this.endpoint(i) }));
    } catch (error) {
      this.expectTransient(error, `a read of ${accounts.join(", ")}`);
      await sleep(20);
      return undefined;
    }
    const seen = new Map<string, { balance: number; version: number }>();
    for (const item of items) {
      expect(item.found, `${item.key} through voter${i + 1}`).toBe(true);
      if (item.found) seen.set(item.key, { balance: item.value as number, version: item.version });
    }
    const read: AccountsRead = { start, end: performance.now(), via: `voter${i + 1}`, seen };
    this.reads.push(read);
    return read;
  }
}

/** What a transfer's durable outcome says of the versions it made. */
async function outcomeOf(client: KeyLoadClient, n: number): Promise<TransferOutcome> {
  const outcome = await durableOutcome(client, `t${n}`);
  if (outcome.status !== "committed") return outcome;
  const { results } = outcome.result as TransactionResult;
  return { status: "committed", versions: new Map(results.map((r) => [r.key, r.version])) };
}
