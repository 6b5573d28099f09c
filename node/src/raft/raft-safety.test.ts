import { describe, expect, it } from "vitest";
import { ProposalRefusedError } from "./errors.js";
import { SeededRandom } from "./seeded-random.js";
import { InMemoryRaftCluster, text } from "./test-fixtures/in-memory-raft-cluster.js";
import { checkLogMatching, InvariantChecker } from "./test-fixtures/invariants.js";
import type { Message, NodeId } from "./types.js";

interface Profile {
  readonly ids: readonly NodeId[];
  readonly drop: number;
  readonly restart: number;
  readonly partition: number;
  /** Reorder each round's messages, duplicate some and delay others by a round. */
  readonly disorder?: boolean;
  /** Persist each Ready a round late, stepping messages while it is outstanding. */
  readonly asyncPersist?: boolean;
}

const FIVE: Profile = { ids: ["a", "b", "c", "d", "e"], drop: 0.05, restart: 0.02, partition: 0.04 };
const THREE_LOSSY: Profile = { ids: ["a", "b", "c"], drop: 0.2, restart: 0.05, partition: 0.06 };
const FIVE_DISORDERED: Profile = { ...FIVE, drop: 0.05, disorder: true };
const THREE_ASYNC: Profile = { ...THREE_LOSSY, drop: 0.1, disorder: true, asyncPersist: true };

interface Outcome {
  commits: number;
  leaders: number;
  reads: number;
  snapshotsInstalled: number;
}

/**
 * A seeded run of five voters under message loss, partitions, crashes, compaction, transfers and
 * reads. Every Ready is checked (see InvariantChecker); reads must be linearizable (a read index
 * covers everything applied anywhere before the read was asked); at the end the healed cluster must
 * converge.
 */
function run(seed: number, rounds: number, profile: Profile = FIVE): Outcome {
  const IDS = profile.ids;
  const rng = new SeededRandom(seed * 7919 + 1);
  const checker = new InvariantChecker();
  const readFloor = new Map<string, number>();
  let reads = 0;
  let snapshotsInstalled = 0;
  const maxApplied = (): number => Math.max(0, ...checker.applied.keys());
  const c = new InMemoryRaftCluster(
    IDS,
    {
      electionTicks: 10,
      maxSizePerMsg: 200,
      maxInflightMsgs: 4,
      snapshotChunkBytes: 32,
      maxInflightSnapshotChunks: 2,
      maxUncommittedEntriesBytes: 4000,
    },
    seed,
    {
      onReady: (id, rd, m) => {
        checker.check(id, rd, m);
        if (rd.snapshot) snapshotsInstalled++;
        for (const r of rd.readStates) {
          const floor = readFloor.get(r.requestId);
          if (floor === undefined) throw new Error(`unknown read ${r.requestId}`);
          if (r.index < floor) throw new Error(`read ${r.requestId} at ${r.index} misses applied ${floor}`);
          reads++;
        }
      },
    },
  );
  let dropRate = profile.drop;
  c.filter = () => !rng.chance(dropRate);
  c.asyncPersist = profile.asyncPersist ?? false;
  if (profile.disorder) {
    c.network = (batch) => {
      const deliver: Message[] = [];
      const hold: Message[] = [];
      for (const m of batch) {
        if (dropRate > 0 && rng.chance(0.1)) hold.push(m);
        else deliver.push(m);
        if (dropRate > 0 && rng.chance(0.05)) hold.push(m);
      }
      for (let i = deliver.length - 1; i > 0; i--) {
        const j = rng.nextInt(i + 1);
        [deliver[i], deliver[j]] = [deliver[j]!, deliver[i]!];
      }
      return { deliver, hold };
    };
  }
  let isolated: NodeId | null = null;
  let n = 0;
  const pick = (): NodeId => IDS[rng.nextInt(IDS.length)]!;
  const leader = (): NodeId | undefined => IDS.find((id) => c.node(id).status().role === "leader");

  for (let round = 0; round < rounds; round++) {
    const l = leader();
    if (l && rng.chance(0.4)) {
      const k = 1 + rng.nextInt(3);
      try {
        c.node(l).proposeBatch(Array.from({ length: k }, () => text(`s${seed}-${n++}`)));
      } catch (err) {
        if (!(err instanceof ProposalRefusedError)) throw err;
      }
    }
    if (rng.chance(profile.partition)) {
      if (isolated === null) {
        isolated = pick();
        c.isolate(isolated);
      } else {
        c.heal();
        isolated = null;
      }
    }
    if (rng.chance(profile.restart)) c.restart(pick(), seed * 100 + round);
    if (rng.chance(0.05)) {
      const id = pick();
      const st = c.member(id).storage;
      const applied = c.node(id).status().applied;
      if (applied > st.snapshot().meta.index + 3) {
        st.createSnapshot(applied, { voters: IDS }, text(`snap@${applied}`));
        st.compact(applied);
      }
    }
    const now = leader();
    if (now && rng.chance(0.02)) c.node(now).transferLeadership(pick());
    if (rng.chance(0.1)) {
      const id = pick();
      const requestId = `r${seed}-${round}`;
      try {
        readFloor.set(requestId, maxApplied());
        c.node(id).readIndex(requestId);
      } catch (err) {
        if (!(err instanceof ProposalRefusedError)) throw err;
      }
    }
    c.tickAll(1);
  }

  // Heal everything: the cluster must converge on one log.
  c.heal();
  dropRate = 0;
  c.tickUntil(() => {
    const lead = leader();
    if (!lead) return false;
    const target = c.node(lead).status();
    if (target.commit !== target.lastIndex) return false;
    return IDS.every((id) => {
      const st = c.node(id).status();
      return st.commit === target.commit && st.applied === target.commit && st.term === target.term;
    });
  }, 300);
  // A transfer may still be under way: it completes or is abandoned within an election timeout.
  c.tickUntil(() => {
    const lead = leader();
    return lead !== undefined && c.node(lead).status().transferee === null;
  }, 50);
  const l = leader()!;
  c.node(l).propose(text("final"));
  c.settle();
  c.tickAll(2);
  for (const id of IDS) expect(c.node(id).status().applied).toBe(c.node(l).status().lastIndex);
  checkLogMatching(c);
  return { commits: c.node(l).status().commit, leaders: checker.leaders.size, reads, snapshotsInstalled };
}

describe("safety under a seeded faulty network", () => {
  it.each([1, 2, 3, 4, 5, 6, 7, 8])("seed %i: all invariants hold and the cluster converges", (seed) => {
    const out = run(seed, 400);
    expect(out.commits).toBeGreaterThan(50);
    expect(out.leaders).toBeGreaterThanOrEqual(2);
  });

  it.each([1, 2, 3, 4, 5, 6])(
    "seed %i, three voters, heavy loss: all invariants hold and it converges",
    (seed) => {
      const out = run(seed, 400, THREE_LOSSY);
      expect(out.commits).toBeGreaterThan(20);
    },
  );

  it.each([1, 2, 3, 4])("seed %i, reordered, duplicated and delayed messages: invariants hold", (seed) => {
    const out = run(seed, 400, FIVE_DISORDERED);
    expect(out.commits).toBeGreaterThan(30);
  });

  it.each([1, 2, 3, 4])("seed %i, asynchronous persistence: invariants hold", (seed) => {
    const out = run(seed, 400, THREE_ASYNC);
    expect(out.commits).toBeGreaterThan(20);
  });

  it("the runs exercise snapshots and reads", () => {
    let snaps = 0;
    let reads = 0;
    for (const seed of [11, 12, 13]) {
      const out = run(seed, 400);
      snaps += out.snapshotsInstalled;
      reads += out.reads;
    }
    expect(snaps).toBeGreaterThan(0);
    expect(reads).toBeGreaterThan(10);
  });

  it("is deterministic: the same seed gives the same outcome", () => {
    expect(run(21, 200)).toEqual(run(21, 200));
  });
});
