import { describe, expect, it } from "vitest";
import { WalGrowth } from "./wal-growth.js";

describe("WalGrowth", () => {
  it("tells a commit that grew the file past the target, and nothing else", () => {
    let size = 0;
    const growth = new WalGrowth(() => size, 100);
    size = 80;
    expect(growth.outgrown()).toBe(false); // grew, within the target
    size = 120;
    expect(growth.outgrown()).toBe(true); // grew past it
    expect(growth.outgrown()).toBe(false); // the same size: frames written over a restarted WAL
    size = 130;
    expect(growth.outgrown()).toBe(true);
    size = 100;
    expect(growth.outgrown()).toBe(false); // cut back at a restart
    size = 110;
    expect(growth.outgrown()).toBe(true); // and grown past the target again
  });
});
