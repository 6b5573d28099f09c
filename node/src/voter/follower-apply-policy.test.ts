import { describe, expect, it } from "vitest";
import type { Entry } from "../raft/types.js";
import { FOLLOWER_APPLY_STRIDE, FOLLOWER_MAX_HELD, FollowerApplyPolicy } from "./follower-apply-policy.js";

const entries = (from: number, to: number): Entry[] => {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push({ index: i, term: 1, type: "normal", data: new Uint8Array() });
  return out;
};
const ready = (appended: Entry[], committed: Entry[]) => ({ entries: appended, committedEntries: committed });

describe("FollowerApplyPolicy", () => {
  it("spreads the voters' phases over the stride in sorted order", () => {
    const voters = ["c", "a", "b"];
    const phases = voters.map((id) => new FollowerApplyPolicy(id, voters).phase);
    expect(phases).toEqual([
      Math.floor((2 * FOLLOWER_APPLY_STRIDE) / 3),
      0,
      Math.floor(FOLLOWER_APPLY_STRIDE / 3),
    ]);
    expect(new Set(phases).size).toBe(3);
  });

  it("puts a voter missing from the voters at the first phase", () => {
    expect(new FollowerApplyPolicy("z", ["a", "b"]).phase).toBe(0);
  });

  it("holdsBack: a follower holds up to FOLLOWER_MAX_HELD entries, a leader none", () => {
    const p = new FollowerApplyPolicy("a", ["a", "b", "c"]);
    expect(p.holdsBack("follower", 0, 1)).toBe(true);
    expect(p.holdsBack("candidate", FOLLOWER_MAX_HELD - 1, 1)).toBe(true);
    expect(p.holdsBack("follower", FOLLOWER_MAX_HELD - 1, 2)).toBe(false);
    expect(p.holdsBack("leader", 0, 1)).toBe(false);
  });

  it("holding: only a voter that does not lead and holds something", () => {
    const p = new FollowerApplyPolicy("a", ["a", "b", "c"]);
    expect(p.holding("follower", 1)).toBe(true);
    expect(p.holding("follower", 0)).toBe(false);
    expect(p.holding("leader", 3)).toBe(false);
  });

  it("fsyncSite: a leader's fsync always runs on the thread pool", () => {
    const p = new FollowerApplyPolicy("a", ["a", "b", "c"]);
    expect(p.fsyncSite("leader", 0, ready([], []))).toBe("thread-pool");
  });

  it("fsyncSite: a follower with nothing to apply syncs on its event loop", () => {
    const p = new FollowerApplyPolicy("a", ["a", "b", "c"]);
    expect(p.fsyncSite("follower", 0, ready(entries(1, FOLLOWER_APPLY_STRIDE), []))).toBe("event-loop");
  });

  it("fsyncSite: more to apply than a follower holds goes to the thread pool", () => {
    const p = new FollowerApplyPolicy("a", ["a", "b", "c"]);
    expect(p.fsyncSite("follower", FOLLOWER_MAX_HELD, ready([], entries(1, 1)))).toBe("thread-pool");
    expect(p.fsyncSite("follower", FOLLOWER_MAX_HELD - 1, ready([], entries(1, 1)))).toBe("event-loop");
  });

  it("fsyncSite: an append reaching this voter's phase, with something to apply, goes to the thread pool", () => {
    const voters = ["a", "b", "c"];
    const p = new FollowerApplyPolicy("b", voters);
    const phase = p.phase;
    expect(phase).toBeGreaterThan(0);
    const stride = FOLLOWER_APPLY_STRIDE;
    const committed = entries(1, 1);
    // One entry exactly at the phase, a stride further, and one just before it.
    expect(p.fsyncSite("follower", 0, ready(entries(stride + phase, stride + phase), committed))).toBe(
      "thread-pool",
    );
    expect(p.fsyncSite("follower", 0, ready(entries(phase, phase), committed))).toBe("thread-pool");
    expect(
      p.fsyncSite("follower", 0, ready(entries(stride + phase - 1, stride + phase - 1), committed)),
    ).toBe("event-loop");
    expect(
      p.fsyncSite("follower", 0, ready(entries(stride + phase + 1, stride + phase + 1), committed)),
    ).toBe("event-loop");
    // A range that spans the phase.
    expect(
      p.fsyncSite("follower", 0, ready(entries(stride + phase - 2, stride + phase + 2), committed)),
    ).toBe("thread-pool");
    // Held entries count as something to apply.
    expect(p.fsyncSite("follower", 1, ready(entries(phase, phase), []))).toBe("thread-pool");
    // The other voters' phases are elsewhere.
    const a = new FollowerApplyPolicy("a", voters);
    expect(a.fsyncSite("follower", 0, ready(entries(stride + phase, stride + phase), committed))).toBe(
      "event-loop",
    );
  });

  it("fsyncSite: a Ready that appends nothing syncs a follower's hard state on its event loop", () => {
    const p = new FollowerApplyPolicy("a", ["a", "b", "c"]);
    expect(p.fsyncSite("follower", 0, ready([], entries(1, 3)))).toBe("event-loop");
  });

  it("fsyncSite: over a whole stride every voter's phase is reached exactly once", () => {
    const voters = ["a", "b", "c"];
    const committed = entries(1, 1);
    for (const id of voters) {
      const p = new FollowerApplyPolicy(id, voters);
      let onPool = 0;
      for (let i = 100; i < 100 + FOLLOWER_APPLY_STRIDE; i++) {
        if (p.fsyncSite("follower", 0, ready(entries(i, i), committed)) === "thread-pool") onPool++;
      }
      expect(onPool).toBe(1);
    }
  });
});
