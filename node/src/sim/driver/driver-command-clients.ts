import type { Lane } from "@keyload/contract";
import { KeyLoadError } from "@keyload/contract";
import { AdmissionRefusal } from "../../admission/admission-refusal.js";
import type { CommandOutcome } from "../../admission/replication-target.js";
import type { SeededRandom } from "../../raft/seeded-random.js";
import type { Entry } from "../../raft/types.js";
import { COMMAND_KINDS, type CommandKind, type RouteParams } from "../../requests/command-kinds.js";
import { CommandPayload } from "../../requests/command-payload.js";
import { decodeCommand } from "../../state/command-envelope.js";
import type { CommandResult, VoterCommand } from "../../voter/command-router.js";
import { pick } from "../random-choices.js";
import { fail } from "../sim-failure.js";
import type { DriverNode } from "./driver-node.js";

/** What the command clients did in a run, for its statistics. */
export interface CommandCounts {
  commands: number;
  /** Refused by the governor of the voter they were sent to, or by the leader's for a forwarded one. */
  commandsRefused: number;
  commandsAcked: number;
  /** Acknowledged by a voter not leading as it answered: forwarded to the leader, as a rule. */
  commandsAckedByFollowers: number;
  commandsUnknown: number;
  commandsUnavailable: number;
}

export function emptyCommandCounts(): CommandCounts {
  return {
    commands: 0,
    commandsRefused: 0,
    commandsAcked: 0,
    commandsAckedByFollowers: 0,
    commandsUnknown: 0,
    commandsUnavailable: 0,
  };
}

/** What the command clients see of the run. */
export interface CommandClientsHost {
  readonly random: SeededRandom;
  /** Nodes whose command path runs and takes requests (not paused). */
  serving(): DriverNode[];
  note(node: string, text: string): void;
  /** Counts `answer`, a call `node`'s current life took, as waiting on it until it settles. */
  track(node: DriverNode, what: string, answer: Promise<unknown>): void;
  /** A check failed inside a promise's continuation: the run ends with it. */
  violation(error: unknown): void;
}

/** The kinds the clients send, with their lane; a lease goes alone in a forward (CommandRouter). */
const KINDS: readonly [CommandKind, Lane][] = [
  ["catalog.put", "data"],
  ["queue.enqueue", "data"],
  ["queue.ack", "control"],
  ["dispatch.append", "control"],
  ["queue.lease", "control"],
];

const TENANTS = ["t1", "t2"];
const PRINCIPALS = ["p1", "p2", "p3"];

/**
 * Clients of the voters' command path, as the HTTP edge hands it requests: a command is admitted by the
 * governor of the voter it reaches (refused there, or by the leader's governor once forwarded), queued
 * on that voter's command scheduler and replicated by its command router, which proposes it while
 * leading and forwards it to the leader otherwise. No command is retried, so each command ID is
 * proposed at most once: the state machine's deduplication of a retried ID, and the outcomes of
 * commands that commit and fail, are the state's own tests' (the simulated state applies every
 * command). Checked: an acknowledged command is the committed entry at the index its
 * answer names; a command refused or answered Unavailable ("nothing was submitted") never commits;
 * no command ID commits twice; the commands a voter acknowledged in one lane committed in the order it
 * took them; and once the cluster is quiet, every command was answered and every voter's governor
 * holds no reservation.
 */
export class DriverCommandClients {
  readonly counts = emptyCommandCounts();
  private nextId = 1;
  /** Every command ID committed so far, with its index. */
  private readonly committed = new Map<string, number>();
  /** Commands answered with a failure that says nothing was submitted, and where. */
  private readonly definite = new Map<string, string>();
  /** Per voter life and lane, the acknowledged commands as [submission number, index], by number. */
  private readonly lanes = new Map<string, [number, number][]>();

  constructor(private readonly host: CommandClientsHost) {}

  /** `entry` committed: applied for the first time anywhere. */
  observeCommitted(entry: Entry): void {
    if (entry.type !== "normal" || entry.data[0] !== 0x4b) return;
    let commandId: string;
    try {
      commandId = decodeCommand(entry.data).commandId;
    } catch {
      return;
    }
    const earlier = this.committed.get(commandId);
    if (earlier !== undefined)
      fail("at-most-once", `command ${commandId} committed at ${earlier} and again at ${entry.index}`);
    this.committed.set(commandId, entry.index);
    const answered = this.definite.get(commandId);
    if (answered !== undefined)
      fail("command-outcome", `command ${commandId} committed at ${entry.index}, but ${answered}`);
  }

  /** One client sends a few commands at once to one voter. */
  operate(): void {
    const serving = this.host.serving();
    if (serving.length === 0) return;
    const { random } = this.host;
    const node = pick(random, serving);
    const count = 1 + random.nextInt(4);
    for (let k = 0; k < count; k++) this.submit(node);
  }

  private submit(node: DriverNode): void {
    const path = node.commands!;
    const { random } = this.host;
    const [kind, lane] = pick(random, KINDS);
    const tenant = pick(random, TENANTS);
    const principal = pick(random, PRINCIPALS);
    const seq = this.nextId++;
    const commandId = `c${seq}`;
    const payload = CommandPayload.fromText(JSON.stringify({ v: "x".repeat(random.nextInt(120)) }));
    this.counts.commands++;
    const admitted = path.governor.tryAdmit({ lane, tenantId: tenant, principalId: principal, payload });
    if (admitted instanceof AdmissionRefusal) {
      this.counts.commandsRefused++;
      this.definite.set(commandId, `${node.id} refused it (${admitted.reason})`);
      return;
    }
    const command: VoterCommand = {
      commandId,
      kind,
      lane,
      params: Object.fromEntries(
        COMMAND_KINDS[kind].map((name) => [name, `${name}${random.nextInt(8)}`]),
      ) as RouteParams,
      payload,
      tenant,
      principal,
      keyId: "key",
    };
    const life = node.life;
    const answered = path.scheduler.submit(admitted, command);
    const what = `command ${commandId} (${lane})`;
    this.host.track(node, what, answered);
    this.host.note(node.id, what);
    answered.then((outcome) =>
      this.guard(() => {
        this.check(node, life, commandId, outcome);
        if (outcome.ok) this.checkLaneOrder(`${node.id}#${life} ${lane}`, seq, outcome.value.index);
      }),
    );
  }

  private check(
    node: DriverNode,
    life: number,
    commandId: string,
    outcome: CommandOutcome<CommandResult>,
  ): void {
    const at = `${node.id}#${life}`;
    if (outcome.ok) {
      const { index } = outcome.value;
      const committedAt = this.committed.get(commandId);
      if (committedAt !== index)
        fail(
          "command-outcome",
          `${at} acknowledged command ${commandId} at ${index}, but it committed at ${committedAt ?? "no index"}`,
        );
      this.counts.commandsAcked++;
      if (!(node.driver?.isLeader() ?? false)) this.counts.commandsAckedByFollowers++;
      this.host.note(node.id, `command ${commandId} acked at ${index}`);
      return;
    }
    const error = outcome.error;
    if (!(error instanceof KeyLoadError))
      fail("core-contract", `${at} answered command ${commandId} with ${String(error)}`);
    this.host.note(node.id, `command ${commandId} ${error.code} ${error.reason}`);
    if (error.code === "UnknownWriteOutcome") {
      this.counts.commandsUnknown++;
      return;
    }
    if (error.code === "ResourceExhausted") this.counts.commandsRefused++;
    else if (error.code === "Unavailable") this.counts.commandsUnavailable++;
    else fail("command-outcome", `${at} answered command ${commandId} with ${error.code} (${error.reason})`);
    const answer = `${at} answered ${error.code} (${error.reason})`;
    const committedAt = this.committed.get(commandId);
    if (committedAt !== undefined)
      fail("command-outcome", `command ${commandId} committed at ${committedAt}, but ${answer}`);
    this.definite.set(commandId, answer);
  }

  /**
   * Each lane is FIFO: of the commands one voter took in one lane, those acknowledged committed in the
   * order it took them. (One answered UnknownWriteOutcome may commit later than those behind it: a
   * forward that timed out may still be served.)
   */
  private checkLaneOrder(lane: string, seq: number, index: number): void {
    const acked = this.lanes.get(lane) ?? [];
    this.lanes.set(lane, acked);
    let at = acked.length;
    while (at > 0 && acked[at - 1]![0] > seq) at--;
    const before = acked[at - 1];
    const after = acked[at];
    if ((before !== undefined && before[1] >= index) || (after !== undefined && after[1] <= index)) {
      const other = before !== undefined && before[1] >= index ? before : after!;
      fail(
        "lane-fifo",
        `${lane}: command c${seq} committed at ${index}, command c${other[0]} at ${other[1]}, out of the order taken`,
      );
    }
    acked.splice(at, 0, [seq, index]);
  }

  /** The reservations `nodes`' governors hold, described; none once every command was answered. */
  held(nodes: readonly DriverNode[]): string[] {
    const held: string[] = [];
    for (const node of nodes) {
      const governor = node.commands?.governor;
      if (governor === undefined) continue;
      for (const lane of ["data", "control"] as const) {
        const usage = governor.usage(lane);
        if (usage.commands !== 0 || usage.retainedBytes !== 0)
          held.push(`${node.id}#${node.life} ${usage.commands} ${lane} (${usage.retainedBytes} bytes)`);
      }
    }
    return held;
  }

  private guard(check: () => void): void {
    try {
      check();
    } catch (error) {
      this.host.violation(error);
    }
  }
}
