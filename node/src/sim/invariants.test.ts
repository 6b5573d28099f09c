import { describe, expect, it } from "vitest";
import type { Entry } from "../raft/types.js";
import { chainDigest, entryDigest } from "./digest.js";
import { COMPACTED, SafetyChecker } from "./invariants.js";
import { violation } from "./test-fixtures/violation.js";

function entry(index: number, term: number, byte = index): Entry {
  return { index, term, type: "normal", data: new Uint8Array([byte]) };
}

/** Applies `entries` (from index 1) as `node`, with the chain a state machine would compute. */
function applyAll(checker: SafetyChecker, node: string, entries: readonly Entry[], termBound: number): void {
  let chain = 0;
  for (const e of entries) {
    const digest = entryDigest(e);
    chain = chainDigest(chain, e.index, e.term, digest);
    checker.observeApply(node, e, digest, chain, termBound);
  }
}

describe("SafetyChecker", () => {
  it("election safety: one leader per term, one vote per term", () => {
    const c = new SafetyChecker();
    expect(c.observeLeader("a", 3)).toBe(true);
    expect(c.observeLeader("a", 3)).toBe(false);
    expect(violation(() => c.observeLeader("b", 3))).toBe("election-safety");
    expect(
      violation(() =>
        c.observeHardState("a", { term: 4, vote: "a", commit: 0 }, { term: 4, vote: "b", commit: 0 }),
      ),
    ).toBe("election-safety");
    expect(
      violation(() =>
        c.observeHardState("a", { term: 4, vote: null, commit: 0 }, { term: 4, vote: "b", commit: 0 }),
      ),
    ).toBeUndefined();
  });

  it("monotonic progress: durable term and commit never go back", () => {
    const c = new SafetyChecker();
    expect(
      violation(() =>
        c.observeHardState("a", { term: 4, vote: null, commit: 0 }, { term: 3, vote: null, commit: 0 }),
      ),
    ).toBe("monotonic-progress");
    expect(
      violation(() =>
        c.observeHardState("a", { term: 4, vote: null, commit: 7 }, { term: 5, vote: null, commit: 6 }),
      ),
    ).toBe("monotonic-progress");
  });

  it("log matching: one (index, term) names one entry after one previous term", () => {
    const c = new SafetyChecker();
    c.observeAppend("a", [entry(1, 1), entry(2, 1), entry(3, 2)], 0, 0);
    c.observeAppend("b", [entry(2, 1), entry(3, 2)], 0, 1);
    expect(violation(() => c.observeAppend("c", [entry(3, 2, 99)], 0, 1))).toBe("log-matching");
    expect(violation(() => c.observeAppend("c", [entry(3, 2)], 0, 2))).toBe("log-matching");
    expect(violation(() => c.observeAppend("c", [entry(4, 1)], 0, 2))).toBe("log-matching");
  });

  it("leader completeness: a later leader must hold what earlier terms committed", () => {
    const c = new SafetyChecker();
    applyAll(c, "a", [entry(1, 1), entry(2, 2)], 2);
    const log = new Map([
      [1, 1],
      [2, 2],
    ]);
    // A leader of term 2 itself may still be committing: only later terms are held to it.
    expect(violation(() => c.checkLeaderLog("b", 2, 1, () => 1))).toBeUndefined();
    expect(violation(() => c.checkLeaderLog("b", 3, 2, (i) => log.get(i)))).toBeUndefined();
    expect(violation(() => c.checkLeaderLog("b", 3, 1, (i) => log.get(i)))).toBe("leader-completeness");
    expect(violation(() => c.checkLeaderLog("b", 3, 2, (i) => (i === 2 ? 3 : 1)))).toBe(
      "leader-completeness",
    );
    expect(violation(() => c.checkLeaderLog("b", 3, 2, () => COMPACTED))).toBeUndefined();
  });

  it("state machine safety: no two nodes apply different entries at one index", () => {
    const c = new SafetyChecker();
    applyAll(c, "a", [entry(1, 1), entry(2, 1)], 1);
    applyAll(c, "b", [entry(1, 1)], 1);
    expect(violation(() => applyAll(c, "c", [entry(1, 1), entry(2, 2)], 2))).toBe("state-machine-safety");
    expect(violation(() => c.observeRestore("c", 2, 1, 12345))).toBe("state-machine-safety");
  });

  it("acknowledged writes must be the committed entry and survive to the end", () => {
    const c = new SafetyChecker();
    applyAll(c, "a", [entry(1, 1), entry(2, 1)], 1);
    c.observeAck("a", 2, 1, entryDigest(entry(2, 1)));
    expect(c.maxAcked).toBe(2);
    expect(violation(() => c.observeAck("a", 1, 1, entryDigest(entry(1, 1, 7))))).toBe("acknowledged-write");
    const one = chainDigest(0, 1, 1, entryDigest(entry(1, 1)));
    expect(violation(() => c.checkFinal("b", 1, one))).toBe("acknowledged-write");
  });

  it("linearizable reads see every write acknowledged before they were issued", () => {
    const c = new SafetyChecker();
    expect(violation(() => c.observeReadState("a", "r1", 5, 5))).toBeUndefined();
    expect(violation(() => c.observeReadState("a", "r2", 4, 5))).toBe("linearizable-read");
  });
});
