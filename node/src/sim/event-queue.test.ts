import { describe, expect, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import { EventQueue } from "./event-queue.js";

describe("EventQueue", () => {
  it("pops by time, and in insertion order on equal times", () => {
    const q = new EventQueue<string>();
    q.push(5, "c");
    q.push(1, "a");
    q.push(5, "d");
    q.push(3, "b");
    q.push(5, "e");
    const out: string[] = [];
    for (let item = q.pop(); item !== undefined; item = q.pop()) out.push(item.value);
    expect(out).toEqual(["a", "b", "c", "d", "e"]);
    expect(q.peekTime()).toBe(Number.POSITIVE_INFINITY);
  });

  it("matches a stable sort on random input", () => {
    const random = new SeededRandom(9);
    const q = new EventQueue<number>();
    const items: { time: number; id: number }[] = [];
    for (let id = 0; id < 500; id++) {
      const time = random.nextInt(40);
      items.push({ time, id });
      q.push(time, id);
      // Interleave pops so the heap is exercised while it grows.
      if (id % 7 === 0) {
        const popped = q.pop()!;
        const at = items.findIndex((x) => x.id === popped.value);
        const min = items.reduce((m, x) => (x.time < m.time || (x.time === m.time && x.id < m.id) ? x : m));
        expect(popped.value).toBe(min.id);
        items.splice(at, 1);
      }
    }
    const rest: number[] = [];
    for (let item = q.pop(); item !== undefined; item = q.pop()) rest.push(item.value);
    expect(rest).toEqual(items.sort((x, y) => x.time - y.time || x.id - y.id).map((x) => x.id));
  });
});
