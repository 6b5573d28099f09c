import { UnknownWriteOutcomeError } from "@keyload/contract";
import { describe, expect, it, vi } from "vitest";
import type { Entry } from "../raft/types.js";
import type { ApplyResult } from "../state/apply-result.js";
import { ProposalWaiters } from "./proposal-waiters.js";

const entry = (index: number, term: number): Entry => ({
  index,
  term,
  type: "normal",
  data: new Uint8Array(),
});
const entries = (from: number, to: number, term: number): Entry[] => {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push(entry(i, term));
  return out;
};
const noop = (entryIndex: number): ApplyResult => ({ type: "noop", entryIndex });
const results = (es: readonly Entry[]): ApplyResult[] => es.map((e) => noop(e.index));

/** Settles `p` within this turn's microtasks; "pending" when it has not. */
async function state<T>(p: Promise<T>): Promise<"pending" | { value: T } | { error: unknown }> {
  const pending = Symbol("pending");
  const settled = await Promise.race([
    p.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
    new Promise<typeof pending>((resolve) => setTimeout(() => resolve(pending), 0)),
  ]);
  return settled === pending ? "pending" : settled;
}

describe("ProposalWaiters", () => {
  it("reports the results of the entries a batch names ahead as each is settled, and says how far they reach", async () => {
    const w = new ProposalWaiters();
    const ahead: string[] = [];
    const batch = w.add(4, 3, 1, undefined, () => true, {
      count: 2,
      settle: (i, result) => ahead.push(`${i}:${result.entryIndex}`),
    });
    expect(w.noticeCommits(entries(1, 3, 1))).toEqual({ more: false, aheadUpTo: 0 });
    expect(w.noticeCommits(entries(4, 6, 1))).toEqual({ more: true, aheadUpTo: 5 });
    w.settle([entry(4, 1)], [noop(4)]);
    expect(ahead).toEqual(["0:4"]);
    w.settle([entry(5, 1), entry(6, 1)], [noop(5), noop(6)]);
    expect(ahead).toEqual(["0:4", "1:5"]);
    expect(await state(batch)).toEqual({ value: [noop(4), noop(5), noop(6)] });
  });

  it("resolves a batch with each entry's apply result once all of it applied", async () => {
    const w = new ProposalWaiters();
    const batch = w.add(5, 3, 2);
    w.settle(entries(5, 6, 2), results(entries(5, 6, 2)));
    expect(await state(batch)).toBe("pending");
    w.settle([entry(7, 2)], [noop(7)]);
    expect(await batch).toEqual([noop(5), noop(6), noop(7)]);
  });

  it("rejects an entry applied with another term as overwritten", async () => {
    const w = new ProposalWaiters();
    const batch = w.add(5, 1, 2);
    w.settle([entry(5, 3)], [noop(5)]);
    await expect(batch).rejects.toMatchObject({ reason: "LeadershipChanged" });
  });

  it("an aborted signal rejects the batch with ReplicationDeadline and forgets it", async () => {
    const w = new ProposalWaiters();
    const ac = new AbortController();
    const batch = w.add(1, 2, 1, ac.signal);
    ac.abort();
    await expect(batch).rejects.toBeInstanceOf(UnknownWriteOutcomeError);
    await expect(batch).rejects.toMatchObject({ reason: "ReplicationDeadline" });
    // Forgotten: a later proposal at the same index with another term is untouched by it.
    const later = w.add(1, 1, 2);
    w.settle([entry(1, 2)], [noop(1)]);
    expect(await later).toEqual([noop(1)]);
  });

  it("a signal aborted already rejects at once", async () => {
    const w = new ProposalWaiters();
    const batch = w.add(1, 1, 1, AbortSignal.abort());
    await expect(batch).rejects.toMatchObject({ reason: "ReplicationDeadline" });
  });

  it("an abort leaves alone a waiter of another term at the same index", async () => {
    const w = new ProposalWaiters();
    const ac = new AbortController();
    void w.add(1, 1, 1, ac.signal).catch(() => undefined);
    const newer = w.add(1, 1, 2);
    ac.abort();
    expect(await state(newer)).toBe("pending");
  });

  it("rejects as overwritten an earlier term's waiter at an index proposed again", async () => {
    const w = new ProposalWaiters();
    const ac = new AbortController();
    // Proposed at term 3; a later leader cut the entries from this log, and at term 5 this node leads
    // again and proposes at the same indexes. The earlier proposal's deadline passes meanwhile.
    const older = w.add(7, 2, 3, ac.signal);
    const single = w.add(9, 1, 3);
    const newer = w.add(7, 3, 5);
    ac.abort();
    expect(await state(older)).toEqual({ error: expect.any(UnknownWriteOutcomeError) });
    expect(await state(older)).toMatchObject({ error: { reason: "LeadershipChanged" } });
    expect(await state(single)).toMatchObject({ error: { reason: "LeadershipChanged" } });
    w.settle(entries(7, 9, 5), results(entries(7, 9, 5)));
    expect(await state(newer)).toEqual({ value: results(entries(7, 9, 5)) });
  });

  it("drops an overwritten batch's commit notice, which would hold back those after it", () => {
    const w = new ProposalWaiters();
    const stale = vi.fn(() => true);
    const fresh = vi.fn(() => false);
    void w.add(5, 4, 3, undefined, stale).catch(() => undefined);
    // At term 5 this node's no-op went to 5 and its next batch to 6..7.
    void w.add(5, 1, 5).catch(() => undefined);
    void w.add(6, 2, 5, undefined, fresh);
    w.noticeCommits(entries(5, 7, 5));
    expect(fresh).toHaveBeenCalledOnce();
    expect(stale).not.toHaveBeenCalled();
  });

  it("a batch whose commit notice a newer term dropped still ends at its deadline", async () => {
    const w = new ProposalWaiters();
    const ac = new AbortController();
    // Proposed at term 3 at 10; leading again at term 5, this node's log ends at 7 and it proposes at 8.
    const stale = w.add(10, 1, 3, ac.signal, () => false);
    void w.add(8, 1, 5, undefined, () => false);
    expect(await state(stale)).toBe("pending");
    // Nothing may ever be written at 10 again: only the deadline ends the wait.
    ac.abort();
    expect(await state(stale)).toMatchObject({ error: { reason: "ReplicationDeadline" } });
  });

  it("stops listening to the signal once the batch settled", async () => {
    const w = new ProposalWaiters();
    const ac = new AbortController();
    const remove = vi.spyOn(ac.signal, "removeEventListener");
    const batch = w.add(1, 1, 1, ac.signal);
    w.settle([entry(1, 1)], [noop(1)]);
    await batch;
    expect(remove).toHaveBeenCalledWith("abort", expect.any(Function));
  });

  it("noticeCommits tells each proposer whose batch completed, in order, and says whether more follows", () => {
    const w = new ProposalWaiters();
    const told: string[] = [];
    void w.add(1, 2, 1, undefined, () => {
      told.push("a");
      return false;
    });
    void w.add(3, 1, 1, undefined, () => {
      told.push("b");
      return true;
    });
    void w.add(4, 2, 1, undefined, () => {
      told.push("c");
      return false;
    });
    expect(w.noticeCommits(entries(1, 2, 1)).more).toBe(false);
    expect(told).toEqual(["a"]);
    // Batch c ends at 5: not complete yet.
    expect(w.noticeCommits(entries(3, 4, 1)).more).toBe(true);
    expect(told).toEqual(["a", "b"]);
    expect(w.noticeCommits(entries(5, 5, 1)).more).toBe(false);
    expect(told).toEqual(["a", "b", "c"]);
    expect(w.noticeCommits(entries(6, 9, 1)).more).toBe(false);
    expect(told).toEqual(["a", "b", "c"]);
  });

  it("noticeCommits says nothing to a proposer whose last entry committed with another term", () => {
    const w = new ProposalWaiters();
    const notify = vi.fn(() => true);
    void w.add(2, 2, 1, undefined, notify).catch(() => undefined);
    expect(w.noticeCommits([entry(2, 1), entry(3, 2)]).more).toBe(false);
    expect(notify).not.toHaveBeenCalled();
    // The notice is gone: nothing is told later either.
    expect(w.noticeCommits(entries(3, 3, 1)).more).toBe(false);
    expect(notify).not.toHaveBeenCalled();
  });

  it("noticeCommits with nothing committed tells no one", () => {
    const w = new ProposalWaiters();
    const notify = vi.fn(() => true);
    void w.add(1, 1, 1, undefined, notify);
    expect(w.noticeCommits([]).more).toBe(false);
    expect(notify).not.toHaveBeenCalled();
  });

  it("noticeCommits stops listening to the committed batch's signal before telling its proposer", () => {
    const w = new ProposalWaiters();
    const ac = new AbortController();
    const order: string[] = [];
    const remove = vi.spyOn(ac.signal, "removeEventListener").mockImplementation(() => order.push("detach"));
    void w.add(1, 1, 1, ac.signal, () => {
      order.push("notify");
      return false;
    });
    w.noticeCommits(entries(1, 1, 1));
    expect(order).toEqual(["detach", "notify"]);
    remove.mockRestore();
  });

  it("failUpTo rejects the proposals at or below a snapshot as overwritten, and only those", async () => {
    const w = new ProposalWaiters();
    const below = w.add(3, 1, 1);
    const at = w.add(4, 1, 1);
    const above = w.add(5, 1, 1);
    w.failUpTo(4);
    await expect(below).rejects.toMatchObject({ reason: "LeadershipChanged" });
    await expect(at).rejects.toMatchObject({ reason: "LeadershipChanged" });
    expect(await state(above)).toBe("pending");
  });

  it("rejectAll rejects every waiter with the error given and forgets them", async () => {
    const w = new ProposalWaiters();
    const error = new Error("stopped");
    const a = w.add(1, 2, 1);
    const b = w.add(3, 1, 1);
    w.rejectAll(error);
    await expect(a).rejects.toBe(error);
    await expect(b).rejects.toBe(error);
    const c = w.add(1, 1, 2);
    w.settle([entry(1, 2)], [noop(1)]);
    expect(await c).toEqual([noop(1)]);
  });

  it("detachNotices stops listening to the signals at once; dropNotices leaves that to settling", () => {
    const w = new ProposalWaiters();
    const ac1 = new AbortController();
    const ac2 = new AbortController();
    const remove1 = vi.spyOn(ac1.signal, "removeEventListener");
    const remove2 = vi.spyOn(ac2.signal, "removeEventListener");
    const notify = vi.fn(() => true);
    void w.add(1, 1, 1, ac1.signal, notify);
    w.dropNotices();
    expect(remove1).not.toHaveBeenCalled();
    void w.add(2, 1, 1, ac2.signal, notify);
    w.detachNotices();
    expect(remove2).toHaveBeenCalledTimes(1);
    // Both are forgotten.
    expect(w.noticeCommits(entries(1, 2, 1)).more).toBe(false);
    expect(notify).not.toHaveBeenCalled();
  });
});
