import { UnavailableError } from "@keyload/contract";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { CommandPayload } from "../requests/command-payload.js";
import { CommandRouter, type ForwardTransport, type VoterCommand } from "./command-router.js";
import type { RaftDriver } from "./raft-driver.js";

function command(commandId: string, forwarded = false): VoterCommand {
  return {
    commandId,
    kind: "queue.ack",
    lane: "control",
    params: { queue: "q", messageId: "m" },
    payload: CommandPayload.fromText("{}"),
    tenant: "t",
    principal: "p",
    keyId: "k",
    ...(forwarded ? { forwarded } : {}),
  };
}

function routerOver(driver: RaftDriver, transport: ForwardTransport, leaderWaitMs: number): CommandRouter {
  return new CommandRouter({
    driver,
    transport,
    logger: pino({ level: "silent" }),
    forwardTimeoutMs: 1_000,
    leaderWaitMs,
  });
}

const notLeader = (commandId: string) => ({
  ok: false,
  error: new UnavailableError("this voter is not the leader; nothing was submitted", {
    reason: "NotLeader",
    commandId,
  }).toBody().error,
});

/**
 * A follower whose leader, as far as it knows, is each of `leaders` in turn: it learns of the next one
 * once the one before answered. `answer` is what a leader answers a forwarded unit with.
 */
function follower(
  leaders: readonly string[],
  answer: (leader: string, commandIds: string[]) => unknown[],
  leaderWaitMs = 2_000,
) {
  let known = 0;
  const sent: string[] = [];
  const bodies: string[][] = [];
  const driver = {
    isLeader: () => false,
    status: () => ({ leader: leaders[known] ?? null, term: 2 }),
    waitApplied: async () => undefined,
  } as unknown as RaftDriver;
  const transport: ForwardTransport = {
    peerInfo: () => ({ connected: true, httpUrl: null, wallMs: null, memberId: null }),
    request: async (leader, _channel, body) => {
      const { commands } = JSON.parse(Buffer.from(body).toString("utf8")) as { commands: VoterCommand[] };
      sent.push(leader);
      bodies.push(commands.map((c) => c.commandId));
      const outcomes = answer(
        leader,
        commands.map((c) => c.commandId),
      );
      known = Math.min(known + 1, leaders.length - 1);
      return Buffer.from(JSON.stringify({ outcomes }));
    },
  };
  const router = routerOver(driver, transport, leaderWaitMs);
  const replicate = (batch: VoterCommand[]) =>
    router.replicate(batch, new AbortController().signal, () => false);
  return { replicate, sent, bodies };
}

const refusal = (reason: string) => (commandId: string) => ({
  ok: false,
  error: new UnavailableError("nothing was submitted", { reason, commandId }).toBody().error,
});

describe("a follower's forward that the leader refused whole", () => {
  it("goes to the next leader when the one it reached no longer led and submitted none of it", async () => {
    let index = 40;
    const { replicate, sent, bodies } = follower(["voter1", "voter3"], (leader, ids) =>
      leader === "voter1"
        ? ids.map(notLeader)
        : ids.map(() => ({ ok: true, value: { index: index++, duplicate: false, result: null } })),
    );
    const outcomes = await replicate([command("a"), command("b")]);
    expect(sent).toEqual(["voter1", "voter3"]);
    expect(bodies).toEqual([
      ["a", "b"],
      ["a", "b"],
    ]);
    expect(outcomes.map((o) => (o.ok ? o.value.index : o.error.code))).toEqual([40, 41]);
  });

  it("goes on as well when the one it reached was stopping or handing its leadership over", async () => {
    for (const reason of ["ShuttingDown", "TransferInProgress"]) {
      const { replicate, sent } = follower(["voter1", "voter3"], (leader, ids) =>
        leader === "voter1"
          ? ids.map(refusal(reason))
          : ids.map(() => ({ ok: true, value: { index: 5, duplicate: false, result: null } })),
      );
      const outcomes = await replicate([command("a")]);
      expect(sent).toEqual(["voter1", "voter3"]);
      expect(outcomes.map((o) => o.ok)).toEqual([true]);
    }
  });

  it("answers a leader's other refusals at once, backpressure among them: the next attempt would meet it again", async () => {
    const { replicate, sent } = follower(["voter1", "voter3"], (_leader, ids) =>
      ids.map(refusal("UncommittedBytesExceeded")),
    );
    const outcomes = await replicate([command("a")]);
    expect(sent).toEqual(["voter1"]);
    expect(outcomes.map((o) => (o.ok ? o.value.index : o.error.reason))).toEqual([
      "UncommittedBytesExceeded",
    ]);
  });

  it("answers what the leader answered when it took some of the unit", async () => {
    const { replicate, sent } = follower(["voter1", "voter3"], (_leader, ids) => [
      notLeader(ids[0]!),
      { ok: true, value: { index: 7, duplicate: false, result: null } },
    ]);
    const outcomes = await replicate([command("a"), command("b")]);
    expect(sent).toEqual(["voter1"]);
    expect(outcomes.map((o) => (o.ok ? o.value.index : o.error.reason))).toEqual(["NotLeader", 7]);
  });

  it("answers the refusal once it has waited for a leader as long as it may", async () => {
    const { replicate, sent } = follower(["voter1"], (_leader, ids) => ids.map(notLeader), 200);
    const started = Date.now();
    const outcomes = await replicate([command("a")]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(sent.length).toBeGreaterThan(1);
    expect(sent.every((leader) => leader === "voter1")).toBe(true);
    expect(outcomes.map((o) => (o.ok ? o.value.index : o.error.reason))).toEqual(["NotLeader"]);
  });

  it("answers a unit that came forwarded itself at once: it never goes to another leader", async () => {
    const { replicate, sent } = follower(["voter1", "voter3"], (_leader, ids) => ids.map(notLeader));
    const started = Date.now();
    const outcomes = await replicate([command("a", true)]);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(sent).toEqual([]);
    expect(outcomes.map((o) => (o.ok ? o.value.index : o.error.reason))).toEqual(["NotLeader"]);
  });
});

describe("a unit on a leader handing its leadership over", () => {
  function handingOver(leaderWaitMs: number, handedAfterMs: number, forwarded = false) {
    const started = Date.now();
    const handed = () => Date.now() - started >= handedAfterMs;
    const sent: string[] = [];
    const driver = {
      isLeader: () => !handed(),
      status: () => ({ id: "voter1", leader: handed() ? "voter3" : "voter1", term: 2, conf: { voters: [] } }),
      propose: () => {
        throw new UnavailableError("nothing was submitted: leadership is being transferred to voter3", {
          reason: "TransferInProgress",
        });
      },
      waitApplied: async () => undefined,
    } as unknown as RaftDriver;
    const transport: ForwardTransport = {
      peerInfo: () => ({ connected: true, httpUrl: null, wallMs: null, memberId: null }),
      request: async (leader) => {
        sent.push(leader);
        return Buffer.from(
          JSON.stringify({ outcomes: [{ ok: true, value: { index: 9, duplicate: false, result: null } }] }),
        );
      },
    };
    const router = routerOver(driver, transport, leaderWaitMs);
    return {
      replicate: () => router.replicate([command("a", forwarded)], new AbortController().signal, () => false),
      sent,
    };
  }

  it("waits for the new leader and forwards the unit to it: nothing was submitted", async () => {
    const { replicate, sent } = handingOver(2_000, 100);
    const outcomes = await replicate();
    expect(sent).toEqual(["voter3"]);
    expect(outcomes.map((o) => (o.ok ? o.value.index : o.error.reason))).toEqual([9]);
  });

  it("answers a unit that came forwarded whole at once: its follower looks for the next leader", async () => {
    const { replicate, sent } = handingOver(2_000, 10_000, true);
    const started = Date.now();
    await expect(replicate()).rejects.toMatchObject({ code: "Unavailable", reason: "TransferInProgress" });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(sent).toEqual([]);
  });

  it("answers the transfer's refusal once it has waited as long as it may", async () => {
    const { replicate, sent } = handingOver(100, 10_000);
    await expect(replicate()).rejects.toMatchObject({ code: "Unavailable", reason: "TransferInProgress" });
    expect(sent).toEqual([]);
  });
});
