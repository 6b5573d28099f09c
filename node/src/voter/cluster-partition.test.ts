import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import { RegisterWorkload } from "./testing/register-workload.js";
import { TcpProxy } from "./testing/tcp-proxy.js";
import { VoterCluster } from "./testing/voter-cluster.js";

const ROUNDS = 12;

let cluster: VoterCluster | undefined;
const links: TcpProxy[] = [];
afterEach(async () => {
  await cluster?.dispose();
  cluster = undefined;
  await Promise.all(links.map((l) => l.close()));
  links.length = 0;
});

describe("three voters whose links the network drops at random, whole or in part", () => {
  it("serve no stale read, lose no acknowledged write, apply every command once and converge", async () => {
    // link[i][j] carries what voter i sends voter j over the connection i dials.
    const link: TcpProxy[][] = [];
    for (let i = 0; i < 3; i++) {
      link.push([]);
      for (let j = 0; j < 3; j++) {
        const proxy = await TcpProxy.start();
        links.push(proxy);
        link[i]!.push(proxy);
      }
    }
    cluster = await VoterCluster.start({
      dialPorts: (i, ports) =>
        ports.map((port, j) => {
          if (i === j) return port;
          link[i]![j]!.targetPort = port;
          return link[i]![j]!.port;
        }),
      env: { KeyLoad__Raft__SnapshotIntervalEntries: "200", KeyLoad__Raft__SnapshotSizeRatio: "0" },
    });
    const c = cluster;
    await c.waitForLeader();
    const urls = c.voters.map((v) => v!.httpUrl);
    const random = new SeededRandom(20261203);
    /** The links a round drops: all of a voter's, both ways of one pair's, or a voter's outgoing only. */
    const faults = (round: number): TcpProxy[] => {
      const leader = c.voters.findIndex((v) => v?.driver.isLeader());
      const v = leader >= 0 && round % 2 === 0 ? leader : random.nextInt(3);
      const others = [0, 1, 2].filter((o) => o !== v);
      switch (round % 3) {
        case 0:
          // Cut off entirely; its clients must then get no stale answer from it.
          return others.flatMap((o) => [link[v]![o]!, link[o]![v]!]);
        case 1: {
          // Two voters lose each other and still reach the third, which must not lose quorum for them.
          const o = others[random.nextInt(2)]!;
          return [link[v]![o]!, link[o]![v]!];
        }
        default:
          // Hears everyone, is heard by no one: a leader must step down, a follower must not disrupt.
          return others.map((o) => link[v]![o]!);
      }
    };
    await RegisterWorkload.around(urls, { writers: 6, readers: 3 }, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        await sleep(300 + random.nextInt(700));
        const down = faults(round);
        for (const l of down) l.blackhole();
        await sleep(500 + random.nextInt(1500));
        for (const l of down) l.restore();
      }
    });
  }, 240_000);
});
