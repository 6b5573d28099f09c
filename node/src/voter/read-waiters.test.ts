import { UnavailableError } from "@keyload/contract";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ReadWaiters } from "./read-waiters.js";

/** Whether `p` has settled after the microtasks queued so far. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  for (let i = 0; i < 5; i++) await Promise.resolve();
  return done;
}

describe("ReadWaiters", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("numbers request IDs after the voter's ID", () => {
    const r = new ReadWaiters("a");
    expect(r.nextRequestId()).toMatch(/^a-[\w-]+-1$/);
    expect(r.nextRequestId()).toMatch(/^a-[\w-]+-2$/);
  });

  it("names reads of a restarted voter apart from those it asked before", () => {
    // A leader's late answer to a read asked before the restart must not settle a new one.
    const before = new ReadWaiters("a").nextRequestId();
    const after = new ReadWaiters("a").nextRequestId();
    expect(after).not.toBe(before);
  });

  it("serves a read once it is confirmed and its index applied", async () => {
    const r = new ReadWaiters("a");
    const read = r.wait("a-1", 1_000);
    r.settle(100);
    expect(await settled(read)).toBe(false);
    r.confirm([{ requestId: "a-1", index: 12 }]);
    expect(r.noneConfirmed()).toBe(false);
    expect(r.waitsBeyond(11)).toBe(true);
    r.settle(11);
    expect(await settled(read)).toBe(false);
    r.settle(12);
    await expect(read).resolves.toBeUndefined();
    expect(r.noneConfirmed()).toBe(true);
    // Its timer is gone with it.
    vi.advanceTimersByTime(1_000);
  });

  it("ignores confirmations and refusals of reads it does not hold", () => {
    const r = new ReadWaiters("a");
    r.confirm([{ requestId: "b-1", index: 3 }]);
    r.refuse([{ requestId: "b-2", reason: "NotLeader" }]);
    expect(r.noneConfirmed()).toBe(true);
  });

  it("fails a refused read with Unavailable and the refusal's reason", async () => {
    const r = new ReadWaiters("a");
    const read = r.wait("a-1", 1_000);
    r.refuse([{ requestId: "a-1", reason: "LeadershipLost" }]);
    await expect(read).rejects.toBeInstanceOf(UnavailableError);
    await expect(read).rejects.toMatchObject({ reason: "LeadershipLost" });
  });

  it("fails a read no leader confirmed in time with ReadIndexTimeout", async () => {
    const r = new ReadWaiters("a");
    const read = r.wait("a-1", 1_000);
    read.catch(() => undefined);
    vi.advanceTimersByTime(1_000);
    await expect(read).rejects.toMatchObject({ reason: "ReadIndexTimeout" });
    // Forgotten: a late confirmation finds nothing.
    r.confirm([{ requestId: "a-1", index: 1 }]);
    expect(r.noneConfirmed()).toBe(true);
  });

  it("fails a confirmed read whose index is not applied in time, and forgets it", async () => {
    const r = new ReadWaiters("a");
    const read = r.wait("a-1", 1_000);
    read.catch(() => undefined);
    r.confirm([{ requestId: "a-1", index: 5 }]);
    vi.advanceTimersByTime(1_000);
    await expect(read).rejects.toMatchObject({ reason: "ReadIndexTimeout" });
    expect(r.noneConfirmed()).toBe(true);
  });

  it("rejectAll fails every read, confirmed or not, with the error given", async () => {
    const r = new ReadWaiters("a");
    const error = new UnavailableError("failed", { reason: "StorageFailed" });
    const pending = r.wait("a-1", 1_000);
    const confirmed = r.wait("a-2", 1_000);
    r.confirm([{ requestId: "a-2", index: 5 }]);
    r.rejectAll(error);
    await expect(pending).rejects.toBe(error);
    await expect(confirmed).rejects.toBe(error);
    expect(r.noneConfirmed()).toBe(true);
  });
});
