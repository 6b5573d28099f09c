import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { CommandAdmissionGovernor } from "../admission/command-admission-governor.js";
import type { CommandReservation } from "../admission/command-reservation.js";
import { CommandScheduler } from "../admission/command-scheduler.js";
import type { CommandOutcome, ReplicationTarget } from "../admission/replication-target.js";
import { allConnected, PeerFixture } from "../peer/test-fixtures/peer-fixture.js";
import type { CommandKind } from "../requests/command-kinds.js";
import { CommandPayload } from "../requests/command-payload.js";
import {
  type CommandResult,
  CommandRouter,
  FORWARD_CHANNEL,
  forwardHandler,
  type VoterCommand,
} from "./command-router.js";
import type { RaftDriver } from "./raft-driver.js";
import type { CommandRejections } from "./voter-metrics.js";

/** Stands for the 64 MiB of a peer frame: a few results of 4 KiB fit an answer, sixteen do not. */
const FRAME_BYTES = 16 * 1024;

let fixture: PeerFixture | undefined;
afterEach(async () => {
  await fixture?.closeAll();
  fixture = undefined;
});

/**
 * A follower forwarding a unit to a real leader over real peer links, whose "Raft" commits every
 * command with a result of 4 KiB, as a lease of large messages would; it records the order it got them.
 */
async function forwarding(): Promise<{
  submit: (kind: CommandKind, id: string) => Promise<CommandOutcome<CommandResult>>;
  proposed: string[];
}> {
  fixture = await PeerFixture.create(["voter1", "voter2"]);
  const follower = await fixture.start("voter1", { maxFrameBytes: FRAME_BYTES });
  const leader = await fixture.start("voter2", { maxFrameBytes: FRAME_BYTES });
  await allConnected({ voter1: follower, voter2: leader });
  const proposed: string[] = [];
  let index = 10;
  const raft: ReplicationTarget<VoterCommand, CommandResult> = {
    replicate: async (batch) =>
      batch.map((c) => {
        proposed.push(c.commandId);
        return {
          ok: true,
          value: { index: index++, duplicate: false, result: { messages: ["x".repeat(4096)] } },
        };
      }),
  };
  const leaderDriver = { isLeader: () => true, releaseHeldAppend: () => undefined } as unknown as RaftDriver;
  leader.handle(
    FORWARD_CHANNEL,
    forwardHandler(new CommandAdmissionGovernor(), new CommandScheduler(raft), leaderDriver, {
      inc: () => undefined,
    } as unknown as CommandRejections),
  );
  const followerDriver = {
    isLeader: () => false,
    status: () => ({ leader: "voter2" }),
    waitApplied: async () => undefined,
  } as unknown as RaftDriver;
  const router = new CommandRouter({
    driver: followerDriver,
    transport: follower,
    logger: pino({ level: "silent" }),
    forwardTimeoutMs: 5_000,
    leaderWaitMs: 1_000,
  });
  const governor = new CommandAdmissionGovernor();
  const scheduler = new CommandScheduler<VoterCommand, CommandResult>(router);
  const submit = (kind: CommandKind, commandId: string) => {
    const payload = CommandPayload.fromText('{"max":1}');
    const reservation = governor.tryAdmit({ lane: "control", tenantId: "t", principalId: "p", payload });
    return scheduler.submit(reservation as CommandReservation, {
      commandId,
      kind,
      lane: "control",
      params: kind === "queue.lease" ? { queue: "q" } : { queue: "q", messageId: "m" },
      payload,
      tenant: "t",
      principal: "p",
      keyId: "k",
    });
  };
  return { submit, proposed };
}

describe("a forwarded unit whose answers would outgrow a peer frame", () => {
  it("answers every committed lease as committed, in the unit's order", async () => {
    const { submit, proposed } = await forwarding();
    const ids = ["l1", "a2", "l3", "l4", "a5", "a6", "l7", "l8"];
    const outcomes = await Promise.all(
      ids.map((id) => submit(id.startsWith("l") ? "queue.lease" : "queue.ack", id)),
    );
    expect(outcomes.map((o) => (o.ok ? "ok" : `${o.error.code} ${o.error.reason}`))).toEqual(
      ids.map(() => "ok"),
    );
    expect(proposed).toEqual(ids);
  });
});
