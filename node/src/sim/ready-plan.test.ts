import { describe, expect, it } from "vitest";
import type { Entry, HardState, Message } from "../raft/index.js";
import { readyOf } from "../raft/test-fixtures/helpers.js";
import { type HeldHardState, planReady } from "./ready-plan.js";

function entries(from: number, to: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push({ term, index: i, type: "normal", data: new Uint8Array([i]) });
  return out;
}

const ready = readyOf;

const stored: HardState = { term: 2, vote: "n1", commit: 3 };
const fresh: HeldHardState = { last: stored, unsaved: null };
const append: Message = {
  type: "append",
  from: "n1",
  to: "n2",
  term: 2,
  index: 5,
  logTerm: 2,
  entries: [],
  commit: 4,
  epoch: 1,
};
const answer: Message = {
  type: "append-response",
  from: "n1",
  to: "n2",
  term: 2,
  index: 5,
  reject: false,
  rejectHint: 0,
  logTerm: 0,
  epoch: 1,
};

describe("planReady", () => {
  it("writes nothing for a hard state whose only change is the commit index, and holds it", () => {
    const committed = entries(4, 4, 2);
    const hard = { ...stored, commit: 4 };
    const plan = planReady(ready({ hardState: hard, committedEntries: committed }), fresh);
    expect(plan.write).toBeNull();
    expect(plan.applyDuringWrite).toEqual([]);
    expect(plan.applyAfterWrite).toEqual(committed);
    expect(plan.held).toEqual({ last: hard, unsaved: hard });
  });

  it("writes a commit index that hands out a membership change, with it or held before", () => {
    const change: Entry = { term: 2, index: 4, type: "conf", data: new Uint8Array([1]) };
    const hard = { ...stored, commit: 4 };
    const plan = planReady(ready({ hardState: hard, committedEntries: [change] }), fresh);
    expect(plan.write).toEqual({ snapshot: null, entries: [], hardState: hard });
    expect(plan.applyDuringWrite).toEqual([]);
    expect(plan.applyAfterWrite).toEqual([change]);
    expect(plan.held).toEqual({ last: hard, unsaved: null });
    const held: HeldHardState = { last: hard, unsaved: hard };
    expect(planReady(ready({ committedEntries: [change] }), held).write).toEqual({
      snapshot: null,
      entries: [],
      hardState: hard,
    });
  });

  it("carries the held commit index with the next write", () => {
    const held: HeldHardState = { last: { ...stored, commit: 4 }, unsaved: { ...stored, commit: 4 } };
    const plan = planReady(ready({ entries: entries(5, 6, 2) }), held);
    expect(plan.write).toEqual({
      snapshot: null,
      entries: entries(5, 6, 2),
      hardState: { ...stored, commit: 4 },
    });
    expect(plan.held).toEqual({ last: { ...stored, commit: 4 }, unsaved: null });
  });

  it("writes a new term or vote even with nothing else to persist", () => {
    const hard = { term: 3, vote: "n2", commit: 3 };
    const plan = planReady(ready({ hardState: hard }), fresh);
    expect(plan.write).toEqual({ snapshot: null, entries: [], hardState: hard });
    expect(plan.held).toEqual({ last: hard, unsaved: null });
  });

  it("applies during the write only what lies below the Ready's first new entry", () => {
    const plan = planReady(
      ready({
        entries: entries(6, 7, 2),
        committedEntries: entries(4, 7, 2),
        hardState: { ...stored, commit: 7 },
      }),
      fresh,
    );
    expect(plan.applyDuringWrite.map((e) => e.index)).toEqual([4, 5]);
    expect(plan.applyAfterWrite.map((e) => e.index)).toEqual([6, 7]);
  });

  it("applies during a hard state's write everything committed when no new entry comes with it", () => {
    const plan = planReady(
      ready({ hardState: { term: 3, vote: null, commit: 5 }, committedEntries: entries(4, 5, 2) }),
      fresh,
    );
    expect(plan.applyDuringWrite.map((e) => e.index)).toEqual([4, 5]);
    expect(plan.applyAfterWrite).toEqual([]);
  });

  it("applies nothing during a snapshot's write, and drops a held commit index it does not carry", () => {
    const snapshot = {
      meta: { index: 9, term: 2, conf: { voters: ["n1", "n2", "n3"] } },
      size: 0,
      checksum: 0,
    };
    const held: HeldHardState = { last: stored, unsaved: { ...stored, commit: 4 } };
    const plan = planReady(ready({ snapshot, committedEntries: entries(4, 4, 2) }), held);
    expect(plan.write).toEqual({ snapshot, entries: [], hardState: null });
    expect(plan.applyDuringWrite).toEqual([]);
    expect(plan.applyAfterWrite.map((e) => e.index)).toEqual([4]);
  });

  it("sends a leader's replication traffic before the write and answers after it", () => {
    const plan = planReady(ready({ entries: entries(5, 5, 2), messages: [answer, append] }), fresh);
    expect(plan.early).toEqual([append]);
    expect(plan.late).toEqual([answer]);
  });
});
