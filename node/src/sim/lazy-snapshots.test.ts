import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PROFILE, LAZY_SNAPSHOT_PROFILE } from "./fault-profile.js";
import { formatFailures, runSeeds, type SeedsSummary } from "./run-seeds.js";
import { runSeed, type SimOptions } from "./simulator.js";

const SEEDS = 400;
const LAZY: SimOptions = { profile: LAZY_SNAPSHOT_PROFILE, steps: 2000 };

/** What the runs did with lazy snapshots, summed over the seeds. */
interface LazyFigures {
  runsAnsweredNull: number;
  unavailable: number;
  abandoned: number;
  copied: number;
  installed: number;
}

// The core's answer to a storage with no snapshot file yet (send nothing, probe, ask again) is
// otherwise met only by a few unit tests; here it meets crashes, partitions, lost and late messages.
describe(`lazy snapshots, ${SEEDS} seeds of the ${LAZY_SNAPSHOT_PROFILE.name} profile`, () => {
  let summary: SeedsSummary;
  const figures: LazyFigures = { runsAnsweredNull: 0, unavailable: 0, abandoned: 0, copied: 0, installed: 0 };
  beforeAll(() => {
    summary = runSeeds({ from: 0, count: SEEDS }, LAZY, ({ stats }) => {
      if (stats.snapshotsUnavailable > 0) figures.runsAnsweredNull++;
      figures.unavailable += stats.snapshotsUnavailable;
      figures.abandoned += stats.snapshotTransfersAbandoned;
      figures.copied += stats.snapshotsCopied;
      figures.installed += stats.snapshotsInstalled;
    });
  });

  it("keep every invariant and converge", () => {
    expect(
      summary.failures.map((f) => f.seed),
      formatFailures(summary.failures),
    ).toEqual([]);
  });

  it("take the core's null path: leaders answered null, transfers dropped, copies made and sent", () => {
    const shown = JSON.stringify(figures);
    // Most runs, not a lucky few.
    expect(figures.runsAnsweredNull, shown).toBeGreaterThan(SEEDS / 2);
    expect(figures.unavailable, shown).toBeGreaterThan(0);
    // rewindSnapshot's null answer, not only startSnapshot's.
    expect(figures.abandoned, shown).toBeGreaterThan(0);
    expect(figures.copied, shown).toBeGreaterThan(0);
    expect(figures.installed, shown).toBeGreaterThan(0);
  });

  it("replay a seed with an identical trace", () => {
    const whole: SimOptions = { ...LAZY, traceCapacity: Number.POSITIVE_INFINITY };
    const first = runSeed(5, whole);
    expect(first.stats.snapshotsCopied).toBeGreaterThan(0);
    expect(runSeed(5, whole).trace.lines()).toEqual(first.trace.lines());
  });
});

describe("the default profile", () => {
  it("gives lazy disks to some runs and leaves others all eager", () => {
    const lazyDisks = Array.from(
      { length: 30 },
      (_, seed) => runSeed(seed, { profile: DEFAULT_PROFILE }).stats.lazyDisks,
    );
    expect(lazyDisks.some((n) => n > 0)).toBe(true);
    expect(lazyDisks.some((n) => n === 0)).toBe(true);
  });
});
