import type { Lane } from "@keyload/contract";
import {
  type ErrorBody,
  errorFromBody,
  isErrorCode,
  KeyLoadError,
  ResourceExhaustedError,
  UnavailableError,
  UnknownWriteOutcomeError,
} from "@keyload/contract";
import type { Logger } from "pino";
import { AdmissionRefusal } from "../admission/admission-refusal.js";
import type { CommandAdmissionGovernor } from "../admission/command-admission-governor.js";
import type { CommandScheduler } from "../admission/command-scheduler.js";
import type { CommandOutcome, OutcomesAhead, ReplicationTarget } from "../admission/replication-target.js";
import { PeerInterruptedError, PeerUnavailableError } from "../peer/peer-errors.js";
import type { PeerTransport } from "../peer/peer-transport.js";
import type { CommandKind, RouteParams } from "../requests/command-kinds.js";
import { CommandPayload } from "../requests/command-payload.js";
import type { ApplyResult } from "../state/apply-result.js";
import { encodeCommand } from "../state/command-envelope.js";
import { type DriverTimers, NODE_TIMERS } from "./driver-timers.js";
import { type LeaderClock, SYSTEM_LEADER_CLOCK } from "./leader-clock.js";
import { LeaderStamper } from "./leader-stamper.js";
import type { RaftDriver } from "./raft-driver.js";
import type { CommandRejections } from "./voter-metrics.js";

/** A command as the voter handles it, with the scope taken from the verified principal catalog. */
export interface VoterCommand {
  readonly commandId: string;
  readonly kind: CommandKind;
  readonly lane: Lane;
  readonly params: RouteParams;
  readonly payload: CommandPayload;
  readonly tenant: string;
  readonly principal: string;
  /** The API key that authenticated the request, checked again when the command applies. */
  readonly keyId: string;
  readonly generated?: { readonly keyHash: string };
  /** Arrived from a follower: never forwarded again, so a leadership change cannot bounce it around. */
  readonly forwarded?: boolean;
}

/** A committed command's durable outcome as the caller sees it. */
export interface CommandResult {
  /** The entry that applied the command (for a duplicate, the first one). */
  readonly index: number;
  /** True when this submission found the outcome of an earlier one with the same ID. */
  readonly duplicate: boolean;
  readonly result: unknown;
}

export const FORWARD_CHANNEL = "forward";

const LEADER_POLL_MS = 20;

/** A refusal's Retry-After travels beside its body, which does not hold it, so a follower relays it too. */
type WireOutcome =
  | { ok: true; value: CommandResult }
  | { ok: false; error: ErrorBody["error"]; retryAfterSeconds?: number };

/** What the router uses of the peer network: requests to the leader, and whether a peer is reachable. */
export type ForwardTransport = Pick<PeerTransport, "request" | "peerInfo">;

/** The clock and timer the router waits for a leader on: Node's in a voter, the simulator's in a run. */
export type RouterTimers = Pick<DriverTimers, "now" | "setTimeout">;

export interface CommandRouterOptions {
  readonly driver: RaftDriver;
  readonly transport: ForwardTransport;
  readonly logger: Logger;
  /** How long a forward to the leader may wait for its answer. */
  readonly forwardTimeoutMs: number;
  /** How long a unit may wait for a reachable leader (an election) before answering Unavailable. */
  readonly leaderWaitMs: number;
  /** What this voter stamps the commands it proposes with while leading (default: the system's). */
  readonly clock?: LeaderClock;
  /** Default: Node's. */
  readonly timers?: RouterTimers;
}

/**
 * Where the command scheduler's units go: on the leader they are proposed to Raft and answered from the
 * state machine's apply results; on a follower they are forwarded to the leader over the peer
 * transport, whose explicit answers (including an admission rejection) are returned unchanged. An
 * interrupted or malformed answer is UnknownWriteOutcome: the leader may have committed the command.
 */
export class CommandRouter implements ReplicationTarget<VoterCommand, CommandResult> {
  private readonly driver: RaftDriver;
  private readonly transport: ForwardTransport;
  private readonly logger: Logger;
  private readonly forwardTimeoutMs: number;
  private readonly leaderWaitMs: number;
  private readonly timers: RouterTimers;
  private readonly stamper: LeaderStamper;

  constructor(options: CommandRouterOptions) {
    this.driver = options.driver;
    this.transport = options.transport;
    this.logger = options.logger;
    this.forwardTimeoutMs = options.forwardTimeoutMs;
    this.leaderWaitMs = options.leaderWaitMs;
    this.timers = options.timers ?? NODE_TIMERS;
    this.stamper = new LeaderStamper(this.driver, this.transport, options.clock ?? SYSTEM_LEADER_CLOCK);
  }

  async replicate(
    batch: readonly VoterCommand[],
    signal: AbortSignal,
    committed: () => boolean,
    ahead?: OutcomesAhead<CommandResult>,
  ): Promise<readonly CommandOutcome<CommandResult>[]> {
    // During an election nothing can commit anyway: wait (bounded) for a reachable leader rather than
    // bounce the caller, so a failover costs one election, not a client retry loop.
    const waitUntil = this.timers.now() + this.leaderWaitMs;
    for (;;) {
      // A forwarded unit's outcomes come back together, so only a proposed one reports any ahead.
      const leading = this.driver.isLeader();
      if (leading) {
        try {
          return await this.propose(batch, signal, committed, ahead);
        } catch (err) {
          // A leader handing its leadership over takes no proposal, and nothing was submitted: the unit
          // waits for the next leader, as during an election. One that came forwarded whole is answered
          // at once: it never goes on, and its followers look for the next leader themselves.
          if (!(err instanceof UnavailableError && err.reason === "TransferInProgress")) throw err;
          if (this.timers.now() >= waitUntil || signal.aborted || batch.every((c) => c.forwarded)) throw err;
        }
      }
      const leader = this.driver.status().leader;
      if (!leading && leader !== null && this.transport.peerInfo(leader)?.connected) {
        let outcomes: CommandOutcome<CommandResult>[] | undefined;
        try {
          outcomes = await this.forwardBatch(leader, batch, signal);
        } catch (err) {
          // Nothing reached the leader: safe to look for the next one.
          if (!(err instanceof UnavailableError && err.reason === "LeaderUnreachable")) throw err;
        }
        // The voter reached no longer led, or was stopping, and submitted none of the unit: it may go
        // to the next leader as well, while the wait allows. A unit that came forwarded never goes on.
        if (
          outcomes !== undefined &&
          (!refusedWhole(batch, outcomes) || this.timers.now() >= waitUntil || signal.aborted)
        )
          return outcomes;
      }
      if (this.timers.now() >= waitUntil || signal.aborted) {
        throw new UnavailableError("no reachable leader; nothing was submitted", {
          reason: leader === null ? "NoLeader" : "LeaderUnreachable",
        });
      }
      await new Promise<void>((resolve) => this.timers.setTimeout(resolve, LEADER_POLL_MS));
    }
  }

  private async forwardBatch(
    leader: string,
    batch: readonly VoterCommand[],
    signal: AbortSignal,
  ): Promise<CommandOutcome<CommandResult>[]> {
    const outcomes = new Array<CommandOutcome<CommandResult>>(batch.length);
    const local: number[] = [];
    batch.forEach((c, i) => {
      if (c.forwarded) {
        outcomes[i] = {
          ok: false,
          error: new UnavailableError(
            "leadership moved before the command was proposed; nothing was submitted",
            {
              reason: "NotLeader",
              commandId: c.commandId,
            },
          ),
        };
      } else {
        local.push(i);
      }
    });
    const groups = answerGroups(local, batch);
    if (groups.length === 1) {
      const group = groups[0]!;
      const forwarded = await this.forward(
        leader,
        group.map((i) => batch[i]!),
        signal,
      );
      group.forEach((i, k) => {
        outcomes[i] = forwarded[k]!;
      });
    } else if (groups.length > 1) {
      const settled = await Promise.allSettled(
        groups.map((group) =>
          this.forward(
            leader,
            group.map((i) => batch[i]!),
            signal,
          ),
        ),
      );
      // Nothing reached the leader: the caller looks for the next one, as for a single request.
      const unreachable = settled.every(
        (s) =>
          s.status === "rejected" &&
          s.reason instanceof UnavailableError &&
          s.reason.reason === "LeaderUnreachable",
      );
      if (unreachable) throw (settled[0] as PromiseRejectedResult).reason;
      settled.forEach((s, g) => {
        groups[g]!.forEach((i, k) => {
          if (s.status === "fulfilled") outcomes[i] = s.value[k]!;
          else if (s.reason instanceof KeyLoadError) {
            outcomes[i] = { ok: false, error: s.reason.withCommandId(batch[i]!.commandId) };
          } else throw s.reason;
        });
      });
    }
    return outcomes;
  }

  private async propose(
    batch: readonly VoterCommand[],
    signal: AbortSignal,
    committed: () => boolean,
    ahead: OutcomesAhead<CommandResult> | undefined,
  ): Promise<CommandOutcome<CommandResult>[]> {
    const stamps = this.stamper.stamps();
    const data = batch.map((c) =>
      encodeCommand({
        commandId: c.commandId,
        kind: c.kind,
        tenant: c.tenant,
        principal: c.principal,
        keyId: c.keyId,
        ...stamps,
        params: c.params,
        payload: c.payload.bytes,
        ...(c.generated ? { generated: c.generated } : {}),
      }),
    );
    const results = await this.driver.propose(
      data,
      signal,
      committed,
      ahead && {
        count: ahead.count,
        settle: (i, result) => ahead.settle(i, toOutcome(result, batch[i]!.commandId)),
      },
    );
    return results.map((r, i) => toOutcome(r, batch[i]!.commandId));
  }

  /** What a log line about a forward names: its leader and term, and the commands whose outcome is unknown. */
  private forwardContext(
    leader: string,
    batch: readonly VoterCommand[],
    more: Readonly<Record<string, unknown>> = {},
  ): Record<string, unknown> {
    return { ...more, leader, term: this.driver.status().term, commandIds: batch.map((c) => c.commandId) };
  }

  private async forward(
    leader: string,
    batch: readonly VoterCommand[],
    signal: AbortSignal,
  ): Promise<CommandOutcome<CommandResult>[]> {
    // On the wire a payload is its text: JSON carries it, and the leader takes the bytes back from it.
    const commands = batch.map((c) => ({ ...c, payload: c.payload.text() }));
    const body = Buffer.from(JSON.stringify({ commands }));
    let answer: Uint8Array;
    try {
      answer = await this.transport.request(leader, FORWARD_CHANNEL, body, {
        timeoutMs: this.forwardTimeoutMs,
        signal,
      });
    } catch (err) {
      if (err instanceof PeerUnavailableError) {
        throw new UnavailableError(`the leader ${leader} is not reachable; nothing was submitted`, {
          reason: "LeaderUnreachable",
        });
      }
      if (err instanceof PeerInterruptedError) {
        throw new UnknownWriteOutcomeError(
          "the forward to the leader was interrupted; retry with the same command ID",
          {
            reason: "ForwardInterrupted",
          },
        );
      }
      this.logger.warn(this.forwardContext(leader, batch, { err }), "the leader failed a forwarded batch");
      throw new UnknownWriteOutcomeError(
        "the leader failed the forwarded batch; retry with the same command ID",
        {
          reason: "ForwardFailed",
        },
      );
    }
    const outcomes = parseWireOutcomes(answer, batch.length);
    if (outcomes === null) {
      this.logger.warn(this.forwardContext(leader, batch), "malformed answer to a forwarded batch");
      throw new UnknownWriteOutcomeError(
        "the leader's answer was malformed; retry with the same command ID",
        {
          reason: "ForwardMalformed",
        },
      );
    }
    let last = 0;
    for (const o of outcomes) if (o.ok) last = Math.max(last, o.value.index);
    await this.driver.waitApplied(last);
    return outcomes.map((o, i) =>
      o.ok
        ? o
        : {
            ok: false,
            error: errorFromBody(o.error, {
              commandId: batch[i]!.commandId,
              retryAfterSeconds: o.retryAfterSeconds,
            }),
          },
    );
  }
}

/** The refusals of a voter that is about to stop leading, or has: the next leader may take the unit. */
const LEADERSHIP_MOVING: ReadonlySet<string> = new Set(["NotLeader", "ShuttingDown", "TransferInProgress"]);

/**
 * Whether the voter a unit was forwarded to refused all of it because it no longer leads (or is
 * stopping, or handing its leadership over), which says nothing was submitted. Not for its other
 * refusals, backpressure among them, which the next attempt would meet again; nor for a unit none of
 * whose commands went (each came forwarded, and is refused here).
 */
function refusedWhole(
  batch: readonly VoterCommand[],
  outcomes: readonly CommandOutcome<CommandResult>[],
): boolean {
  return (
    batch.some((c) => !c.forwarded) &&
    outcomes.every((o) => !o.ok && o.error.code === "Unavailable" && LEADERSHIP_MOVING.has(o.error.reason))
  );
}

/** The kinds whose result may reach the canonical `maxLeaseBytes` (a lease's messages, a delivery's changes). */
const LARGE_RESULT_KINDS: ReadonlySet<CommandKind> = new Set<CommandKind>([
  "queue.lease",
  "subscription.deliver",
]);

/**
 * The requests a forwarded unit goes in (indexes into `batch`), so that no answer can outgrow a peer
 * frame: a leader answers a request's outcomes in one frame, and a unit of sixteen leases of up to
 * `maxLeaseBytes` each would not fit, which the follower could only report as UnknownWriteOutcome
 * though every one had committed. Each command of a large-result kind goes alone, the others together
 * between them, in the unit's order: requests on one connection reach the leader in the order sent, and
 * its scheduler takes them in that order, so each lane stays FIFO.
 */
function answerGroups(indexes: readonly number[], batch: readonly VoterCommand[]): number[][] {
  const groups: number[][] = [];
  let small: number[] | null = null;
  for (const i of indexes) {
    if (LARGE_RESULT_KINDS.has(batch[i]!.kind)) {
      groups.push([i]);
      small = null;
    } else if (small === null) {
      small = [i];
      groups.push(small);
    } else {
      small.push(i);
    }
  }
  return groups;
}

/**
 * The leader's side of forwarding: each forwarded command is admitted into this voter's own governor
 * under the verified scope the follower forwarded, then queued on this voter's command scheduler. An
 * admission refusal is answered explicitly, so the follower can return it unchanged.
 */
export function forwardHandler(
  governor: CommandAdmissionGovernor,
  scheduler: CommandScheduler<VoterCommand, CommandResult>,
  driver: RaftDriver,
  rejections: CommandRejections,
): (from: string, body: Uint8Array) => Promise<Uint8Array> {
  return async (from, body) => {
    const commands = parseForwardedBatch(body);
    const outcomes = await Promise.all(
      commands.map(async (c): Promise<WireOutcome> => {
        if (!driver.isLeader()) {
          return wireFailure(
            new UnavailableError("this voter is not the leader; nothing was submitted", {
              reason: "NotLeader",
              commandId: c.commandId,
            }),
          );
        }
        const admitted = governor.tryAdmit({
          lane: c.lane,
          tenantId: c.tenant,
          principalId: c.principal,
          payload: c.payload,
        });
        if (admitted instanceof AdmissionRefusal) {
          // Counted here, where the governor refused: the follower only relays the answer.
          rejections.inc({ lane: c.lane, reason: admitted.reason });
          return wireFailure(admitted.toError(c.commandId, true));
        }
        const outcome = await scheduler.submit(admitted, { ...c, forwarded: true });
        return outcome.ok ? outcome : wireFailure(outcome.error.withCommandId(c.commandId));
      }),
    );
    // What the leader knows committed goes out ahead of the answer, so the follower can apply the
    // commands before it answers its client (CommandRouter.forward). `from` is the voter's name, which
    // is not its member ID once it was replaced: the driver releases by name.
    driver.releaseHeldAppend(from);
    return Buffer.from(JSON.stringify({ outcomes }));
  };
}

function toOutcome(r: ApplyResult, commandId: string): CommandOutcome<CommandResult> {
  if (r.type !== "command") {
    return {
      ok: false,
      error: new UnknownWriteOutcomeError("the entry did not apply as a command", {
        reason: "NotACommand",
        commandId,
      }),
    };
  }
  const o = r.outcome;
  if (o.status === "committed")
    return { ok: true, value: { index: o.index, duplicate: r.duplicate, result: o.result } };
  return {
    ok: false,
    error: new KeyLoadError(o.error.code, o.error.message, {
      reason: o.error.reason,
      commandId,
      details: { index: o.index },
    }),
  };
}

function wireFailure(error: KeyLoadError): WireOutcome {
  const retryAfterSeconds = error instanceof ResourceExhaustedError ? error.retryAfterSeconds : undefined;
  return {
    ok: false,
    error: error.toBody().error,
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  };
}

/** The outcomes in a leader's answer to a forwarded batch, or null when the answer is malformed. */
export function parseWireOutcomes(answer: Uint8Array, expected: number): WireOutcome[] | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength).toString("utf8"));
  } catch {
    return null;
  }
  if (!isRecord(parsed) || !Array.isArray(parsed.outcomes) || parsed.outcomes.length !== expected)
    return null;
  const out: WireOutcome[] = [];
  for (const o of parsed.outcomes as unknown[]) {
    if (!isRecord(o)) return null;
    if (
      o.ok === true &&
      isRecord(o.value) &&
      typeof o.value.index === "number" &&
      typeof o.value.duplicate === "boolean"
    ) {
      out.push({
        ok: true,
        value: { index: o.value.index, duplicate: o.value.duplicate, result: o.value.result },
      });
    } else if (
      o.ok === false &&
      isRecord(o.error) &&
      typeof o.error.code === "string" &&
      isErrorCode(o.error.code) &&
      typeof o.error.reason === "string" &&
      typeof o.error.message === "string"
    ) {
      out.push({
        ok: false,
        error: {
          code: o.error.code,
          reason: o.error.reason,
          message: o.error.message,
          ...(isRecord(o.error.details) ? { details: o.error.details } : {}),
        },
        ...(Number.isSafeInteger(o.retryAfterSeconds) && (o.retryAfterSeconds as number) > 0
          ? { retryAfterSeconds: o.retryAfterSeconds as number }
          : {}),
      });
    } else {
      return null;
    }
  }
  return out;
}

function parseForwardedBatch(body: Uint8Array): VoterCommand[] {
  const parsed: unknown = JSON.parse(
    Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8"),
  );
  if (!isRecord(parsed) || !Array.isArray(parsed.commands))
    throw new TypeError("a forwarded batch must hold commands");
  return (parsed.commands as unknown[]).map((c) => {
    if (
      !isRecord(c) ||
      typeof c.commandId !== "string" ||
      typeof c.kind !== "string" ||
      (c.lane !== "data" && c.lane !== "control") ||
      !isRecord(c.params) ||
      typeof c.payload !== "string" ||
      typeof c.tenant !== "string" ||
      typeof c.principal !== "string" ||
      typeof c.keyId !== "string"
    ) {
      throw new TypeError("malformed forwarded command");
    }
    return { ...c, payload: CommandPayload.fromText(c.payload) } as unknown as VoterCommand;
  });
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
