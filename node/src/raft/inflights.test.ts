import { describe, expect, it } from "vitest";
import { Inflights } from "./inflights.js";

describe("Inflights", () => {
  it("is full once maxCount messages are in flight", () => {
    const f = new Inflights(3, 0);
    expect(f.full()).toBe(false);
    f.add(1, 10);
    f.add(2, 10);
    expect(f.full()).toBe(false);
    f.add(3, 10);
    expect(f.count()).toBe(3);
    expect(f.full()).toBe(true);
  });

  it("is full once the byte budget is reached, and 0 means unbounded bytes", () => {
    const f = new Inflights(100, 25);
    f.add(1, 10);
    f.add(2, 10);
    expect(f.full()).toBe(false);
    f.add(3, 5);
    expect(f.full()).toBe(true);

    const unbounded = new Inflights(100, 0);
    unbounded.add(1, 1_000_000_000);
    expect(unbounded.full()).toBe(false);
  });

  it("freeLE frees every message whose last index is at most the index", () => {
    const f = new Inflights(10, 100);
    f.add(3, 10);
    f.add(5, 20);
    f.add(9, 30);
    f.freeLE(4);
    expect(f.count()).toBe(2);
    f.freeLE(5);
    expect(f.count()).toBe(1);
    // Bytes were released as well: 30 in flight, room for 70 more.
    f.add(10, 69);
    expect(f.full()).toBe(false);
    f.add(11, 1);
    expect(f.full()).toBe(true);
    f.freeLE(100);
    expect(f.count()).toBe(0);
    expect(f.full()).toBe(false);
  });

  it("freeLE below the oldest message frees nothing", () => {
    const f = new Inflights(2, 0);
    f.add(5, 1);
    f.add(6, 1);
    f.freeLE(4);
    expect(f.count()).toBe(2);
    expect(f.full()).toBe(true);
  });

  it("freeFirstOne frees exactly the oldest message", () => {
    const f = new Inflights(3, 0);
    f.add(4, 1);
    f.add(7, 1);
    f.add(9, 1);
    f.freeFirstOne();
    expect(f.count()).toBe(2);
    expect(f.full()).toBe(false);
    f.freeLE(7);
    expect(f.count()).toBe(1);
    new Inflights(1, 0).freeFirstOne(); // empty: no-op, no throw
  });

  it("reset empties the window", () => {
    const f = new Inflights(2, 10);
    f.add(1, 10);
    f.add(2, 10);
    f.reset();
    expect(f.count()).toBe(0);
    expect(f.full()).toBe(false);
  });

  it("keeps exact counts across many adds and frees (internal compaction)", () => {
    const f = new Inflights(10_000, 0);
    for (let i = 1; i <= 5000; i++) f.add(i, 1);
    f.freeLE(3000);
    expect(f.count()).toBe(2000);
    for (let i = 5001; i <= 6000; i++) f.add(i, 1);
    expect(f.count()).toBe(3000);
    f.freeLE(5500);
    expect(f.count()).toBe(500);
    f.freeFirstOne();
    expect(f.count()).toBe(499);
    f.freeLE(6000);
    expect(f.count()).toBe(0);
  });
});
