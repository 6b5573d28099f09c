import { execFileSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { probeVoter } from "../voter-health.js";
import {
  dumpLogsOnFailure,
  partitionUnavailableReason,
  startCluster,
  type TestCluster,
  VOTER_NAMES,
} from "./index.js";

// Partitions need root and iptables (apt-get install -y iptables); anywhere else this is skipped, and says why.
const unavailable = await partitionUnavailableReason();

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.dispose();
  cluster = undefined;
});

function ourChains(): string[] {
  const rules = execFileSync("iptables", ["-w", "-S"], { encoding: "utf8" });
  return [...rules.matchAll(new RegExp(`-N (KLAH-${process.pid}-\\d+)`, "g"))].map((m) => m[1]!);
}

describe.skipIf(unavailable !== undefined)(
  `network partitions${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    it("isolates the leader, lets the majority elect another, and heals without leaving a rule", async (context) => {
      cluster = await startCluster({
        env: { KeyLoad__Raft__ElectionTimeoutMs: "400", KeyLoad__Raft__HeartbeatIntervalMs: "50" },
      });
      dumpLogsOnFailure(context, cluster);
      const old = await cluster.waitForLeader();
      const majority = VOTER_NAMES.filter((name) => name !== old.name);

      await cluster.partition([[old.name], majority]);
      expect(ourChains()).toHaveLength(1);
      const next = await cluster.waitForLeader({ excluding: [old.name], timeoutMs: 20_000 });
      expect(majority).toContain(next.name);
      // Check-quorum: the isolated leader hears from no quorum and steps down.
      await expect
        .poll(async () => (await probeVoter(old.httpUrl, 1_000)).role, { timeout: 10_000, interval: 100 })
        .not.toBe("leader");
      await cluster.adminClient().put("written-in-the-majority", true);

      await cluster.heal();
      expect(ourChains()).toEqual([]);
      await cluster.waitForReady(20_000);
      const value = await cluster.adminClient().get("written-in-the-majority", { endpoint: old.httpUrl });
      expect(value.value).toBe(true);
    });

    it("removes its rules on dispose, even while partitioned", async () => {
      cluster = await startCluster();
      await cluster.partition([["voter1"], ["voter2"], ["voter3"]]);
      expect(ourChains()).toHaveLength(1);
      await cluster.dispose();
      cluster = undefined;
      expect(ourChains()).toEqual([]);
    });
  },
);
