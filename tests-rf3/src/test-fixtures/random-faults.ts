import { setTimeout as sleep } from "node:timers/promises";
import { linksBetween, type TestCluster, VOTER_NAMES, type VoterName } from "@keyload/apphost/testing";
import { SeededRandom } from "./seeded-random.js";

export interface RandomFaults {
  /** Whether a workload can send to voter `i` (of `cluster.voters`) now: a killed one it cannot. */
  readonly reachable: (i: number) => boolean;
  /** Runs the rounds; every fault is undone when it returns or throws. */
  readonly run: () => Promise<void>;
}

/**
 * A fault schedule of `rounds` rounds at random times, in turn:
 * - a random voter killed (SIGKILL) and started again;
 * - the leader stopped (SIGSTOP) and resumed: it wakes believing it still leads, requests queued;
 * - where `partitions` (root and iptables), the leader cut off from the other voters and healed: its
 *   clients still reach it, and it must answer none of them from a leadership it has lost.
 */
export function randomFaults(
  cluster: TestCluster,
  seed: number,
  rounds: number,
  options: { readonly partitions: boolean },
): RandomFaults {
  const up = VOTER_NAMES.map(() => true);
  const random = new SeededRandom(seed);
  const kinds = options.partitions ? (["kill", "pause", "cut"] as const) : (["kill", "pause"] as const);
  const leaderOrAny = async (): Promise<VoterName> =>
    (await cluster.leader())?.name ?? VOTER_NAMES[random.nextInt(VOTER_NAMES.length)]!;
  const run = async (): Promise<void> => {
    for (let round = 0; round < rounds; round++) {
      await sleep(300 + random.nextInt(900));
      switch (kinds[round % kinds.length]!) {
        case "kill": {
          const v = random.nextInt(VOTER_NAMES.length);
          up[v] = false;
          await cluster.kill(VOTER_NAMES[v]!);
          await sleep(100 + random.nextInt(700));
          await cluster.start(VOTER_NAMES[v]!);
          up[v] = true;
          break;
        }
        case "pause": {
          const victim = await leaderOrAny();
          cluster.pause(victim);
          try {
            await sleep(500 + random.nextInt(1500));
          } finally {
            cluster.resume(victim);
          }
          break;
        }
        case "cut":
          await cluster.cut(linksBetween([[await leaderOrAny()]]));
          try {
            await sleep(500 + random.nextInt(1500));
          } finally {
            await cluster.heal();
          }
          break;
      }
    }
  };
  return { reachable: (i) => up[i]!, run };
}
