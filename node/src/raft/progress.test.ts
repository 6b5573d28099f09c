import { describe, expect, it } from "vitest";
import { Progress } from "./progress.js";
import type { Snapshot } from "./types.js";

const snap = (index: number, term = 1): Snapshot => ({
  meta: { index, term, conf: { voters: ["a", "b", "c"] } },
  size: 4,
  checksum: 0,
});

describe("Progress", () => {
  it("starts in probe state with the given next and no match", () => {
    const pr = new Progress(11, 4, 0);
    expect(pr.state).toBe("probe");
    expect(pr.next).toBe(11);
    expect(pr.match).toBe(0);
    expect(pr.isPaused()).toBe(false);
  });

  it("probe: paused after sending one append until an answer", () => {
    const pr = new Progress(5, 4, 0);
    pr.probeSent = true;
    expect(pr.isPaused()).toBe(true);
    expect(pr.maybeUpdate(4)).toBe(true);
    expect(pr.isPaused()).toBe(false);
  });

  it("maybeUpdate raises match and next, and reports stale acknowledgements", () => {
    const pr = new Progress(5, 4, 0);
    expect(pr.maybeUpdate(7)).toBe(true);
    expect(pr.match).toBe(7);
    expect(pr.next).toBe(8);
    expect(pr.maybeUpdate(6)).toBe(false);
    expect(pr.match).toBe(7);
    expect(pr.next).toBe(8);
    expect(pr.maybeUpdate(7)).toBe(false);
  });

  it("maybeUpdate never lowers an optimistic next", () => {
    const pr = new Progress(5, 4, 0);
    pr.maybeUpdate(4);
    pr.becomeReplicate();
    pr.next = 20;
    expect(pr.maybeUpdate(10)).toBe(true);
    expect(pr.next).toBe(20);
  });

  it("becomeReplicate sets next to match+1 and clears the window", () => {
    const pr = new Progress(9, 2, 0);
    pr.maybeUpdate(6);
    pr.becomeReplicate();
    expect(pr.state).toBe("replicate");
    expect(pr.next).toBe(7);
    pr.inflights.add(7, 1);
    pr.inflights.add(8, 1);
    expect(pr.isPaused()).toBe(true);
    pr.becomeReplicate();
    expect(pr.isPaused()).toBe(false);
  });

  it("becomeProbe from replicate restarts at match+1", () => {
    const pr = new Progress(9, 2, 0);
    pr.maybeUpdate(6);
    pr.becomeReplicate();
    pr.next = 15;
    pr.becomeProbe();
    expect(pr.state).toBe("probe");
    expect(pr.next).toBe(7);
    expect(pr.probeSent).toBe(false);
  });

  it("becomeProbe after a snapshot resumes right after the snapshot", () => {
    const pr = new Progress(3, 2, 0);
    pr.maybeUpdate(2);
    pr.becomeSnapshot(snap(50));
    expect(pr.state).toBe("snapshot");
    expect(pr.isPaused()).toBe(true);
    expect(pr.transfer).toMatchObject({ sentOffset: 0, ackedOffset: 0, started: false });
    pr.becomeProbe();
    expect(pr.next).toBe(51);
    expect(pr.transfer).toBeNull();

    const ahead = new Progress(3, 2, 0);
    ahead.becomeSnapshot(snap(50));
    ahead.maybeUpdate(60);
    ahead.becomeProbe();
    expect(ahead.next).toBe(61);
  });

  describe("maybeDecrTo", () => {
    it("replicate: a rejection at or below match is stale", () => {
      const pr = new Progress(1, 4, 0);
      pr.maybeUpdate(5);
      pr.becomeReplicate();
      pr.next = 9;
      expect(pr.maybeDecrTo(5, 0)).toBe(false);
      expect(pr.maybeDecrTo(3, 0)).toBe(false);
      expect(pr.next).toBe(9);
    });

    it("replicate: a fresh rejection falls back to match+1", () => {
      const pr = new Progress(1, 4, 0);
      pr.maybeUpdate(5);
      pr.becomeReplicate();
      pr.next = 9;
      expect(pr.maybeDecrTo(7, 2)).toBe(true);
      expect(pr.next).toBe(6);
    });

    it("probe: only the rejection of the last probe (next-1) counts", () => {
      const pr = new Progress(10, 4, 0);
      pr.probeSent = true;
      expect(pr.maybeDecrTo(8, 3)).toBe(false);
      expect(pr.next).toBe(10);
      expect(pr.probeSent).toBe(true);
    });

    it("probe: jumps to the hint and unpauses", () => {
      const pr = new Progress(10, 4, 0);
      pr.probeSent = true;
      expect(pr.maybeDecrTo(9, 3)).toBe(true);
      expect(pr.next).toBe(4);
      expect(pr.probeSent).toBe(false);
    });

    it("probe: never goes below match+1, nor above the rejected index", () => {
      const pr = new Progress(10, 4, 0);
      pr.maybeUpdate(5);
      pr.next = 10;
      expect(pr.maybeDecrTo(9, 1)).toBe(true);
      expect(pr.next).toBe(6);

      const other = new Progress(10, 4, 0);
      expect(other.maybeDecrTo(9, 50)).toBe(true);
      expect(other.next).toBe(9);
    });
  });

  it("snapshot state is always paused", () => {
    const pr = new Progress(1, 4, 0);
    pr.becomeSnapshot(snap(3));
    expect(pr.isPaused()).toBe(true);
    pr.probeSent = false;
    expect(pr.isPaused()).toBe(true);
  });

  it("replicate pauses on the byte budget too", () => {
    const pr = new Progress(1, 100, 50);
    pr.becomeReplicate();
    pr.inflights.add(1, 30);
    expect(pr.isPaused()).toBe(false);
    pr.inflights.add(2, 20);
    expect(pr.isPaused()).toBe(true);
  });
});
