import { describe, expect, it } from "vitest";
import { ReadIndexQueue } from "./read-index-queue.js";

describe("ReadIndexQueue", () => {
  it("confirms reads in FIFO order up to a round", () => {
    const q = new ReadIndexQueue();
    q.push({ requestId: "r1", from: null, index: 5, round: 1 });
    q.push({ requestId: "r2", from: "b", index: 5, round: 2 });
    q.push({ requestId: "r3", from: null, index: 6, round: 3 });
    expect(q.hasPending()).toBe(true);
    expect(q.confirm(0)).toEqual([]);
    expect(q.confirm(2).map((r) => r.requestId)).toEqual(["r1", "r2"]);
    expect(q.hasPending()).toBe(true);
    expect(q.confirm(2)).toEqual([]);
    expect(q.confirm(10).map((r) => r.requestId)).toEqual(["r3"]);
    expect(q.hasPending()).toBe(false);
  });

  it("drain returns pending and deferred reads and empties both", () => {
    const q = new ReadIndexQueue();
    q.push({ requestId: "r1", from: null, index: 5, round: 1 });
    q.push({ requestId: "r2", from: "b", index: 5, round: 2 });
    q.confirm(1);
    q.deferred.push({ requestId: "d1", from: null });
    expect(q.drain().map((r) => r.requestId)).toEqual(["r2", "d1"]);
    expect(q.hasPending()).toBe(false);
    expect(q.deferred).toEqual([]);
    expect(q.drain()).toEqual([]);
  });
});
