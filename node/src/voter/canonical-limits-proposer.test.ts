import { afterEach, describe, expect, it } from "vitest";
import type { StateMachine } from "../state/state-machine.js";
import { driverParts } from "./test-fixtures/cluster-per-test.js";
import { stateDump } from "./test-fixtures/storage-faults.js";
import { call, VoterCluster } from "./test-fixtures/voter-cluster.js";
import { waitFor } from "./test-fixtures/wait-for.js";

let cluster: VoterCluster | undefined;
afterEach(async () => {
  await cluster?.dispose();
  cluster = undefined;
});

const LIMIT = "KeyLoad__Canonical__MaxMutationBytes";

const stateMachineOf = (c: VoterCluster, i: number): StateMachine =>
  driverParts(c.voter(i).driver).stateMachine as unknown as StateMachine;

describe("canonical limits changed by restarting the voters with new ones", () => {
  it("take effect on every voter at the entry the leader proposes, and nowhere before", async () => {
    const c = await VoterCluster.start({
      voterEnv: { 0: { [LIMIT]: "4096" }, 1: { [LIMIT]: "4096" }, 2: { [LIMIT]: "4096" } },
    });
    cluster = c;
    let leader = await c.waitForLeader();
    const big = { value: "x".repeat(1000) };
    expect(
      (await call(c.voter(leader).httpUrl, "PUT", "/v1/catalog/before", { body: big, commandId: "b1" }))
        .status,
    ).toBe(200);

    for (let i = 0; i < 3; i++) await c.stop(i);
    for (let i = 0; i < 3; i++) c.envs[i]![LIMIT] = "512";
    for (let i = 0; i < 3; i++) await c.restart(i);
    leader = await c.waitForLeader();
    // Every voter comes back applying under the limits its state keeps, until the leader's entry.
    await waitFor(
      () =>
        [0, 1, 2].every((i) => {
          const sm = stateMachineOf(c, i);
          return sm.keptLimitsFingerprint() === sm.limitsFingerprint;
        }),
      "every voter to apply the configured limits' entry",
    );
    const refused = await call(c.voter(leader).httpUrl, "PUT", "/v1/catalog/after", {
      body: big,
      commandId: "a1",
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: { reason: "MutationTooLarge" } });
    await waitFor(() => {
      const commit = c.voter(leader).driver.status().commit;
      return c.voters.every((v) => v !== null && v.driver.status().applied === commit);
    }, "every voter to apply the leader's commit");
    const dumps = c.voters.map((v) => stateDump(v!));
    expect(dumps[1]).toBe(dumps[0]);
    expect(dumps[2]).toBe(dumps[0]);
  }, 90_000);
});
