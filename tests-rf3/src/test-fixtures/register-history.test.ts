import { describe, expect, it } from "vitest";
import {
  type FinalDocument,
  type ReadOp,
  type RegisterOp,
  registerViolations,
  type WriteOp,
  type WriteOutcome,
} from "./register-history.js";

function write(n: number, start: number, end: number | undefined, fields: Partial<WriteOp> = {}): WriteOp {
  return { kind: "write", key: "k", n, start, end, ...fields };
}

function read(start: number, end: number, seen: ReadOp["seen"]): ReadOp {
  return { kind: "read", key: "k", start, end, seen, via: "voter1" };
}

function committed(version: number): WriteOutcome {
  return { status: "committed", key: "k", version };
}

function check(
  ops: RegisterOp[],
  outcomes: Record<number, WriteOutcome>,
  final: FinalDocument | undefined,
): string[] {
  const finals = new Map<string, FinalDocument>(final ? [["k", final]] : []);
  return registerViolations(ops, new Map(Object.entries(outcomes).map(([n, o]) => [Number(n), o])), finals);
}

describe("registerViolations", () => {
  it("accepts overlapping writes in either order, unanswered commits and reads between them", () => {
    const ops: RegisterOp[] = [
      read(0, 1, "absent"),
      // c1 and c2 overlap, so either may be first; c2 committed first.
      write(1, 2, 10, { answer: { version: 2 } }),
      write(2, 3, 6, { answer: { version: 1 } }),
      read(4, 5, "absent"),
      read(7, 8, { value: 2, version: 1 }),
      read(9, 11, { value: 1, version: 2 }),
      // Never answered, committed: it may take effect any time after its start.
      write(3, 12, undefined),
      read(13, 14, { value: 1, version: 2 }),
      read(15, 16, { value: 3, version: 3 }),
      write(4, 17, 18, { expectedVersion: 3, answer: { version: 4 } }),
      write(5, 19, 20, { expectedVersion: 3, answer: "failed-precondition" }),
      // Never answered, never committed.
      write(6, 21, undefined),
    ];
    const outcomes = {
      1: committed(2),
      2: committed(1),
      3: committed(3),
      4: committed(4),
      5: { status: "failed", code: "FailedPrecondition" } as const,
    };
    expect(check(ops, outcomes, { value: 4, version: 4 })).toEqual([]);
  });

  it("finds a read that missed a write acknowledged before it began", () => {
    const ops = [write(1, 0, 1, { answer: { version: 1 } }), read(2, 3, "absent")];
    expect(check(ops, { 1: committed(1) }, { value: 1, version: 1 })).toEqual([
      "k: write c1 (version 1) ended before a read through voter1 that saw nothing began, yet the first is later in the version order",
    ]);
  });

  it("finds two reads that saw versions in the opposite order to the one they ran in", () => {
    const ops = [
      write(1, 0, 1, { answer: { version: 1 } }),
      write(2, 2, 20, { answer: { version: 2 } }),
      read(3, 4, { value: 2, version: 2 }),
      read(5, 6, { value: 1, version: 1 }),
    ];
    expect(check(ops, { 1: committed(1), 2: committed(2) }, { value: 2, version: 2 })).toHaveLength(1);
  });

  it("finds a read of a write that had not begun", () => {
    const ops = [read(0, 1, { value: 1, version: 1 }), write(1, 2, undefined)];
    expect(check(ops, { 1: committed(1) }, { value: 1, version: 1 })).toHaveLength(1);
  });

  it("finds an acknowledged write that never committed", () => {
    const ops = [write(1, 0, 1, { answer: { version: 1 } })];
    expect(check(ops, {}, undefined)).toEqual([
      "write c1 of k was answered version 1, and its outcome is never committed",
    ]);
  });

  it("finds a refusal answered for a command that committed", () => {
    const ops = [write(1, 0, 1, { expectedVersion: 0, answer: "failed-precondition" })];
    expect(check(ops, { 1: committed(1) }, { value: 1, version: 1 })).toEqual([
      "write c1 of k was answered FailedPrecondition, and its outcome is committed to k at version 1",
    ]);
  });

  it("finds a conditional write that committed at another version than it expected", () => {
    const ops = [
      write(1, 0, 1, { answer: { version: 1 } }),
      write(2, 2, 3, { expectedVersion: 0, answer: { version: 2 } }),
    ];
    expect(check(ops, { 1: committed(1), 2: committed(2) }, { value: 2, version: 2 })).toEqual([
      "write c2 of k expected version 0 and committed at 2",
    ]);
  });

  it("finds two writes at one version, and a version no write made", () => {
    const ops = [write(1, 0, 1, { answer: { version: 1 } }), write(2, 0, 1, { answer: { version: 1 } })];
    expect(check(ops, { 1: committed(1), 2: committed(1) }, { value: 2, version: 2 })).toEqual([
      "writes c1 and c2 both committed k at 1",
      "k ends at version 2, and 1 of its writes committed",
      "no write of k committed at version 2",
    ]);
  });

  it("finds a final value another write than the last one wrote", () => {
    const ops = [write(1, 0, 1, { answer: { version: 1 } }), write(2, 2, 3, { answer: { version: 2 } })];
    expect(check(ops, { 1: committed(1), 2: committed(2) }, { value: 1, version: 2 })).toEqual([
      "k ends with value 1 at version 2, which c2 wrote",
    ]);
  });

  it("finds a read whose value committed at another version than it saw", () => {
    const ops = [write(1, 0, 1, { answer: { version: 1 } }), read(2, 3, { value: 1, version: 2 })];
    expect(check(ops, { 1: committed(1) }, { value: 1, version: 1 })).toEqual([
      "a read of k through voter1 saw value 1 at version 2, and write c1's outcome is committed to k at version 1",
    ]);
  });
});
