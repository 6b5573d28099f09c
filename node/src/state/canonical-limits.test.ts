import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { limitsFingerprint, resolveLimits } from "./limits.js";
import { committed, LogBuilder, refused, TempStates } from "./test-fixtures/state-fixtures.js";

/**
 * The canonical limits an entry applies under are the state's, kept in it (CanonicalLimitsStore), not
 * the voter's configuration of the moment: a voter restarted with other limits replays its log as it
 * was applied elsewhere, and the new limits take effect where a `system.canonicalLimits` entry commits.
 */

let temp: TempStates;
beforeEach(() => {
  temp = new TempStates();
});
afterEach(async () => {
  await temp.cleanup();
});

const put = (log: LogBuilder, key: string, bytes: number) =>
  log.command("catalog.put", { value: "x".repeat(bytes) }, { params: { key } });

describe("the canonical limits, kept in the state", () => {
  it("keep applying entries under the limits the state holds after a restart with others configured", async () => {
    const log = new LogBuilder();
    const first = temp.create("a", { maxMutationBytes: 4096 });
    // What a new cluster's first leader proposes: its configured limits.
    committed(first.apply(log.canonicalLimits({ maxMutationBytes: 4096 })));
    committed(first.apply(put(log, "k1", 1000)));
    await first.close();
    // Restarted with a smaller bound: entries committed before apply as they did on every other voter.
    const again = temp.create("a", { maxMutationBytes: 512 });
    expect(again.limits.maxMutationBytes).toBe(4096);
    expect(again.keptLimitsFingerprint()).not.toBe(again.limitsFingerprint);
    committed(again.apply(put(log, "k2", 1000)));
    // Until the entry that changes them: from there on, the new ones.
    const change = committed<{ limitsFingerprint: string }>(
      again.apply(log.canonicalLimits({ maxMutationBytes: 512 })),
    );
    expect(change.limitsFingerprint).toBe(limitsFingerprint(resolveLimits({ maxMutationBytes: 512 })));
    expect(again.keptLimitsFingerprint()).toBe(again.limitsFingerprint);
    expect(refused(again.apply(put(log, "k3", 1000)))).toMatchObject({ code: "InvalidArgument" });
  });

  it("leave voters restarted with other limits in the middle of a log in the same state", async () => {
    const log = new LogBuilder();
    const entries = [
      log.canonicalLimits({ maxMutationBytes: 4096 }),
      put(log, "k1", 1000),
      put(log, "k2", 1000),
      log.canonicalLimits({ maxMutationBytes: 512 }),
      put(log, "k3", 1000),
      // Undone by a later term's leader: a command of its own, not the first one's duplicate.
      log.canonicalLimits({ maxMutationBytes: 4096 }, 2),
      put(log, "k4", 1000),
    ];
    const a = temp.create("a", { maxMutationBytes: 4096 });
    let b = temp.create("b", { maxMutationBytes: 4096 });
    for (const entry of entries.slice(0, 2)) {
      a.apply(entry);
      b.apply(entry);
    }
    await b.close();
    b = temp.create("b", { maxMutationBytes: 100 });
    const statuses = (sm: typeof a) =>
      entries.slice(2).map((e) => {
        const r = sm.apply(e);
        return r.type === "command" ? r.outcome.status : r.type;
      });
    expect(statuses(a)).toEqual(["committed", "committed", "failed", "committed", "committed"]);
    expect(statuses(b)).toEqual(["committed", "committed", "failed", "committed", "committed"]);
    expect(b.dump()).toBe(a.dump());
  });
});
