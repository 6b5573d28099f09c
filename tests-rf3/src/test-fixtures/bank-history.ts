import { type Placed, placedRead, placedWrite, realTimeInversions } from "./version-order.js";
import { violationsOf } from "./violations.js";

/**
 * The checks of a bank's history under faults: accounts in catalog keys, each transfer one transaction
 * that moves an amount between two accounts, conditional on the versions it read, and reads of many
 * accounts at once (`bulk-get`) through any voter.
 *
 * - Atomicity: every read of all the accounts sums to the bank's total, whatever the faults did.
 * - Each account is a versioned register (version-order.ts): its versions are made once each, by the
 *   initial deposit and the transfers that committed; a read saw the balance the transfer that made
 *   its version wrote; and the version order agrees with real time.
 * - Every answer is its command's durable outcome, and a transfer committed at the versions it expected.
 * - Every voter ends with each account's last version, and its balance.
 */

/** What every account holds at version 1, before any transfer. */
export interface Bank {
  readonly accounts: readonly string[];
  readonly opening: number;
}

/** Transfer `t<n>`: the balances it writes, each expecting the version it read. */
export interface TransferOp {
  readonly n: number;
  readonly writes: readonly {
    readonly account: string;
    readonly balance: number;
    readonly expectedVersion: number;
  }[];
  readonly start: number;
  end?: number;
  answer?: "committed" | "failed-precondition";
}

/** A read of some accounts in one request, answered. */
export interface AccountsRead {
  readonly start: number;
  readonly end: number;
  readonly via: string;
  readonly seen: ReadonlyMap<string, { readonly balance: number; readonly version: number }>;
}

export type TransferOutcome =
  | { readonly status: "committed"; readonly versions: ReadonlyMap<string, number> }
  | { readonly status: "failed"; readonly code: string }
  | { readonly status: "none" };

/** Everything a bank whose transfers are atomic and linearizable could not have answered; empty if none. */
export function bankViolations(
  bank: Bank,
  transfers: readonly TransferOp[],
  reads: readonly AccountsRead[],
  outcomes: ReadonlyMap<number, TransferOutcome>,
  /** What every voter holds once the faults are over (the same on all of them). */
  finals: ReadonlyMap<string, { readonly balance: number; readonly version: number }>,
): string[] {
  return violationsOf((report) => {
    const total = bank.opening * bank.accounts.length;
    for (const read of reads) {
      if (read.seen.size !== bank.accounts.length) continue;
      let sum = 0;
      for (const { balance } of read.seen.values()) sum += balance;
      if (sum !== total) report(`a read through ${read.via} summed to ${sum}, not ${total}`);
    }

    // account -> version -> the balance written there, and by what.
    const written = new Map(
      bank.accounts.map((a) => [a, new Map([[1, { balance: bank.opening, by: "the opening" }]])]),
    );
    const placed = new Map<string, Placed[]>(bank.accounts.map((a) => [a, []]));
    for (const op of transfers) {
      const outcome = outcomes.get(op.n) ?? { status: "none" };
      const name = `transfer t${op.n}`;
      if (op.answer === "committed" && outcome.status !== "committed") {
        report(`${name} was answered, and its outcome is ${describe(outcome)}`);
      }
      if (
        op.answer === "failed-precondition" &&
        (outcome.status !== "failed" || outcome.code !== "FailedPrecondition")
      ) {
        report(`${name} was answered FailedPrecondition, and its outcome is ${describe(outcome)}`);
      }
      if (outcome.status !== "committed") continue;
      for (const { account, balance, expectedVersion } of op.writes) {
        const version = outcome.versions.get(account);
        if (version !== expectedVersion + 1) {
          report(`${name} expected ${account} at ${expectedVersion} and committed it at ${version}`);
          continue;
        }
        const other = written.get(account)!.get(version);
        if (other !== undefined) report(`${other.by} and ${name} both made ${account}'s version ${version}`);
        written.get(account)!.set(version, { balance, by: name });
        const end = op.answer === undefined ? undefined : op.end;
        placed.get(account)!.push(placedWrite(version, op.start, end, `${name} (version ${version})`));
      }
    }

    for (const read of reads) {
      for (const [account, { balance, version }] of read.seen) {
        const made = written.get(account)?.get(version);
        if (made === undefined || made.balance !== balance) {
          report(
            `a read through ${read.via} saw ${account} at ${balance}, version ${version}, where ` +
              (made ? `${made.by} wrote ${made.balance}` : "no committed transfer wrote"),
          );
        }
        const name = `a read through ${read.via} that saw version ${version}`;
        placed.get(account)?.push(placedRead(version, read.start, read.end, name));
      }
    }
    for (const [account, versions] of written) {
      for (let version = 1; version <= versions.size; version++) {
        if (!versions.has(version)) report(`no transfer made ${account}'s version ${version}`);
      }
      const final = finals.get(account);
      const last = versions.get(versions.size);
      if (final?.version !== versions.size || final.balance !== last?.balance) {
        report(
          `${account} ends at ${final ? `${final.balance}, version ${final.version}` : "nothing"}, and the last ` +
            `of its ${versions.size} versions is ${last?.balance}`,
        );
      }
      realTimeInversions(account, placed.get(account)!, report);
    }
  });
}

function describe(outcome: TransferOutcome): string {
  switch (outcome.status) {
    case "committed":
      return `committed at ${[...outcome.versions].map(([a, v]) => `${a} ${v}`).join(", ")}`;
    case "failed":
      return `failed (${outcome.code})`;
    default:
      return "never committed";
  }
}
