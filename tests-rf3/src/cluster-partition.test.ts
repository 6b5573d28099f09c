import { setTimeout as sleep } from "node:timers/promises";
import {
  linksBetween,
  partitionsUnavailable,
  VOTER_NAMES,
  type VoterLink,
  type VoterName,
} from "@keyload/apphost/testing";
import { describe, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";
import { RegisterWorkload } from "./test-fixtures/register-workload.js";
import { SeededRandom } from "./test-fixtures/seeded-random.js";

const ROUNDS = 6;

// Partitions need root and iptables; elsewhere this is skipped, and says why.
const noPartitions = await partitionsUnavailable();
const startCluster = clusterPerTest();

describe.skipIf(noPartitions !== undefined)(
  `three voters whose links the network drops at random, whole or in part${noPartitions ? ` (skipped: ${noPartitions})` : ""}`,
  () => {
    it("serve no stale read, lose no acknowledged write, apply every command once and converge", async () => {
      const cluster = await startCluster({
        env: {
          ...FAST_RAFT,
          KeyLoad__Raft__SnapshotIntervalEntries: "200",
        },
      });
      const random = new SeededRandom(20261203);
      /** The links a round drops: all of a voter's, both ways of one pair's, or a voter's outgoing only. */
      const faults = async (round: number): Promise<VoterLink[]> => {
        const leader = round % 2 === 0 ? await cluster.leader() : undefined;
        const v: VoterName = leader?.name ?? VOTER_NAMES[random.nextInt(3)]!;
        const others = VOTER_NAMES.filter((o) => o !== v);
        switch (round % 3) {
          case 0:
            // Cut off entirely; its clients must then get no stale answer from it.
            return linksBetween([[v]]);
          case 1: {
            // Two voters lose each other and still reach the third, which must not lose quorum for them.
            const o = others[random.nextInt(2)]!;
            return [
              [v, o],
              [o, v],
            ];
          }
          default:
            // Hears everyone, is heard by no one: a leader must step down, a follower must not disrupt.
            return others.map((o): VoterLink => [v, o]);
        }
      };
      await RegisterWorkload.run(cluster, { keys: 3, writers: 6, readers: 3 }, async () => {
        for (let round = 0; round < ROUNDS; round++) {
          await sleep(300 + random.nextInt(700));
          await cluster.cut(await faults(round));
          await sleep(500 + random.nextInt(1500));
          await cluster.heal();
        }
      });
    });
  },
);
