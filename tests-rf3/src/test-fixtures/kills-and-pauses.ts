import { setTimeout as sleep } from "node:timers/promises";
import { type TestCluster, VOTER_NAMES } from "@keyload/apphost/testing";
import { SeededRandom } from "./seeded-random.js";

/**
 * A fault schedule: rounds at random times, even ones killing a random voter (SIGKILL) and starting
 * it again, odd ones stopping the leader (SIGSTOP) so that it wakes believing it still leads, with
 * requests queued. `reachable` tells a workload which voters it can send to (a killed one cannot).
 */
export function killsAndPauses(
  cluster: TestCluster,
  seed: number,
  rounds: number,
): { readonly reachable: (i: number) => boolean; readonly run: () => Promise<void> } {
  const up = VOTER_NAMES.map(() => true);
  const random = new SeededRandom(seed);
  const run = async (): Promise<void> => {
    for (let round = 0; round < rounds; round++) {
      await sleep(300 + random.nextInt(900));
      if (round % 2 === 1) {
        const victim = (await cluster.leader())?.name ?? VOTER_NAMES[random.nextInt(3)]!;
        cluster.pause(victim);
        try {
          await sleep(500 + random.nextInt(1500));
        } finally {
          cluster.resume(victim);
        }
        continue;
      }
      const v = random.nextInt(3);
      up[v] = false;
      await cluster.kill(VOTER_NAMES[v]!);
      await sleep(100 + random.nextInt(700));
      await cluster.start(VOTER_NAMES[v]!);
      up[v] = true;
    }
  };
  return { reachable: (i) => up[i]!, run };
}
