import { describe, expect, it } from "vitest";
import {
  type AccountsRead,
  type Bank,
  bankViolations,
  type TransferOp,
  type TransferOutcome,
} from "./bank-history.js";

const bank: Bank = { accounts: ["a", "b"], opening: 10 };

function transfer(
  n: number,
  from: [number, number],
  to: [number, number],
  fields: Partial<TransferOp> = {},
): TransferOp {
  return {
    n,
    writes: [
      { account: "a", balance: from[0], expectedVersion: from[1] },
      { account: "b", balance: to[0], expectedVersion: to[1] },
    ],
    start: 0,
    ...fields,
  };
}

function read(start: number, end: number, a: [number, number], b?: [number, number]): AccountsRead {
  const seen = new Map([["a", { balance: a[0], version: a[1] }]]);
  if (b) seen.set("b", { balance: b[0], version: b[1] });
  return { start, end, via: "voter1", seen };
}

const committed = (a: number, b: number): TransferOutcome => ({
  status: "committed",
  versions: new Map([
    ["a", a],
    ["b", b],
  ]),
});

function finals(a: [number, number], b: [number, number]): Map<string, { balance: number; version: number }> {
  return new Map([
    ["a", { balance: a[0], version: a[1] }],
    ["b", { balance: b[0], version: b[1] }],
  ]);
}

describe("bankViolations", () => {
  it("accepts transfers, a refused one, an unanswered one that committed, and reads between them", () => {
    const transfers = [
      transfer(0, [7, 1], [13, 1], { start: 0, end: 2, answer: "committed" }),
      transfer(1, [5, 1], [15, 1], { start: 1, end: 3, answer: "failed-precondition" }),
      transfer(2, [6, 2], [14, 2], { start: 4 }),
    ];
    const reads = [
      read(0, 1, [10, 1], [10, 1]),
      read(3, 4, [7, 2], [13, 2]),
      read(5, 6, [6, 3]),
      read(7, 8, [6, 3], [14, 3]),
    ];
    const outcomes = new Map([
      [0, committed(2, 2)],
      [1, { status: "failed", code: "FailedPrecondition" } as const],
      [2, committed(3, 3)],
    ]);
    expect(bankViolations(bank, transfers, reads, outcomes, finals([6, 3], [14, 3]))).toEqual([]);
  });

  it("finds a read that saw half a transfer", () => {
    const transfers = [transfer(0, [7, 1], [13, 1], { start: 0, end: 2, answer: "committed" })];
    const violations = bankViolations(
      bank,
      transfers,
      [read(1, 2, [7, 2], [10, 1])],
      new Map([[0, committed(2, 2)]]),
      finals([7, 2], [13, 2]),
    );
    expect(violations).toEqual(["a read through voter1 summed to 17, not 20"]);
  });

  it("finds a stale read of one account, and a balance no transfer wrote", () => {
    const transfers = [transfer(0, [7, 1], [13, 1], { start: 0, end: 2, answer: "committed" })];
    const violations = bankViolations(
      bank,
      transfers,
      [read(3, 4, [10, 1]), read(5, 6, [8, 2])],
      new Map([[0, committed(2, 2)]]),
      finals([7, 2], [13, 2]),
    );
    expect(violations).toEqual([
      "a read through voter1 saw a at 8, version 2, where transfer t0 wrote 7",
      "a: transfer t0 (version 2) ended before a read through voter1 that saw version 1 began, yet the first is later in the version order",
    ]);
  });

  it("finds answers their outcomes contradict, a transfer at a version it did not expect, and a lost version", () => {
    const transfers = [
      transfer(0, [7, 1], [13, 1], { answer: "committed" }),
      transfer(1, [5, 1], [15, 1], { answer: "failed-precondition" }),
      transfer(2, [4, 1], [16, 1]),
    ];
    const outcomes = new Map([
      [0, { status: "none" } as const],
      [1, committed(2, 2)],
      [2, committed(3, 3)],
    ]);
    expect(bankViolations(bank, transfers, [], outcomes, finals([4, 3], [16, 3]))).toEqual([
      "transfer t0 was answered, and its outcome is never committed",
      "transfer t1 was answered FailedPrecondition, and its outcome is committed at a 2, b 2",
      "transfer t2 expected a at 1 and committed it at 3",
      "transfer t2 expected b at 1 and committed it at 3",
      "a ends at 4, version 3, and the last of its 2 versions is 5",
      "b ends at 16, version 3, and the last of its 2 versions is 15",
    ]);
  });

  it("finds two transfers making one version", () => {
    const transfers = [transfer(0, [7, 1], [13, 1]), transfer(1, [5, 1], [15, 1])];
    const outcomes = new Map([
      [0, committed(2, 2)],
      [1, committed(2, 2)],
    ]);
    expect(bankViolations(bank, transfers, [], outcomes, finals([5, 2], [15, 2]))).toEqual([
      "transfer t0 and transfer t1 both made a's version 2",
      "transfer t0 and transfer t1 both made b's version 2",
    ]);
  });
});
