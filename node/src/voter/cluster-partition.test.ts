import { afterEach, describe, expect, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import { RegisterWorkload } from "./testing/register-workload.js";
import { TcpProxy } from "./testing/tcp-proxy.js";
import { VoterCluster } from "./testing/voter-cluster.js";
import { waitFor200 } from "./testing/voter-process.js";

const ROUNDS = 10;

let cluster: VoterCluster | undefined;
const links: TcpProxy[] = [];
afterEach(async () => {
  await cluster?.dispose();
  cluster = undefined;
  await Promise.all(links.map((l) => l.close()));
  links.length = 0;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("three voters whose links the network drops at random", () => {
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
    const workload = new RegisterWorkload(urls, { writers: 6, readers: 3 });
    const random = new SeededRandom(20261203);
    const cutOff = (v: number, down: boolean) => {
      for (let o = 0; o < 3; o++) {
        if (o === v) continue;
        for (const l of [link[v]![o]!, link[o]![v]!]) down ? l.blackhole() : l.restore();
      }
    };
    try {
      for (let round = 0; round < ROUNDS; round++) {
        await sleep(300 + random.nextInt(700));
        // Half the rounds cut off the leader, whose clients must then get no stale answer from it.
        const leader = c.voters.findIndex((v) => v?.driver.isLeader());
        const victim = round % 2 === 0 && leader >= 0 ? leader : random.nextInt(3);
        cutOff(victim, true);
        await sleep(500 + random.nextInt(1500));
        cutOff(victim, false);
      }
    } finally {
      await workload.stop();
    }
    await Promise.all(urls.map((url) => waitFor200(`${url}/health/ready`)));
    expect(workload.reads).toBeGreaterThan(0);
    await workload.verifyConverged();
  }, 240_000);
});
