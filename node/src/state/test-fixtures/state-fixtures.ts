import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Entry } from "../../raft/types.js";
import type { RouteParams } from "../../requests/command-kinds.js";
import type { FaultHook } from "../../storage/fault-hook.js";
import { hashApiKey } from "../api-key.js";
import { ApiKeyHasher } from "../api-key-hasher.js";
import type { ApplyResult } from "../apply-result.js";
import { bootstrapAdminCommand } from "../bootstrap-admin-command.js";
import { canonicalLimitsCommand } from "../canonical-limits-command.js";
import { type EntryKind, encodeCommand } from "../command-envelope.js";
import type { CommandOutcome } from "../command-outcomes.js";
import { type CanonicalLimits, resolveLimits } from "../limits.js";
import { StateMachine } from "../state-machine.js";

export const ADMIN_KEY = "bootstrap-admin-key-for-tests";
export const ADMIN_KEY_HASH = hashApiKey(ADMIN_KEY);
/** The hasher of every test state machine: what stored hashes would be under a test cluster secret. */
export const TEST_KEY_HASHER = new ApiKeyHasher("a test cluster secret");

/** State machines in a temporary directory that `cleanup` closes and removes. */
export class TempStates {
  readonly dir = mkdtempSync(join(tmpdir(), "keyload-state-"));
  private readonly open: StateMachine[] = [];

  path(name: string): string {
    return join(this.dir, name);
  }

  create(name: string, limits?: Partial<CanonicalLimits>, faultHook?: FaultHook): StateMachine {
    const sm = StateMachine.open({
      path: this.path(`${name}.db`),
      keyHasher: TEST_KEY_HASHER,
      ...(limits === undefined ? {} : { limits }),
      ...(faultHook === undefined ? {} : { faultHook }),
    });
    this.open.push(sm);
    return sm;
  }

  async cleanup(): Promise<void> {
    await Promise.all(this.open.map((sm) => sm.close()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface CommandOptions {
  readonly tenant?: string;
  readonly principal?: string;
  /** The key that sent the command; none by default, as for an entry not made from a request. */
  readonly keyId?: string;
  readonly commandId?: string;
  /** Milliseconds after the log's current time; both of the leader's clocks then stay there. */
  readonly advanceMs?: number;
  /**
   * A wall-clock stamp other than the log's, as a leader's wall clock that leapt or stepped back gives;
   * the monotonic reading follows the log all the same.
   */
  readonly timestampMs?: number;
  readonly keyHash?: string;
  /** Proposes the key hash as a format-2 command did: its plain SHA-256, to be keyed at apply. */
  readonly unkeyed?: true;
  readonly params?: RouteParams;
}

/** Builds a Raft log of command entries, with indexes, terms and leader stamps. */
export class LogBuilder {
  readonly entries: Entry[] = [];
  /** The leader's wall clock. */
  nowMs = 1_700_000_000_000;
  /** The leader's monotonic clock, moved with the wall clock. */
  monotonicMs = 0;
  term = 1;
  private nextId = 1;

  command(kind: EntryKind, payload: unknown, options: CommandOptions = {}): Entry {
    this.advance(options.advanceMs ?? 1);
    const data = encodeCommand({
      commandId: options.commandId ?? `cmd-${this.nextId++}`,
      kind,
      tenant: options.tenant ?? "t1",
      principal: options.principal ?? "p1",
      ...(options.keyId === undefined ? {} : { keyId: options.keyId }),
      timestampMs: options.timestampMs ?? this.nowMs,
      monotonicMs: this.monotonicMs,
      params: options.params ?? {},
      ...(options.keyHash === undefined
        ? {}
        : {
            generated: { keyHash: options.keyHash, ...(options.unkeyed ? { unkeyed: true as const } : {}) },
          }),
      payload: typeof payload === "string" ? payload : JSON.stringify(payload),
    });
    return this.raw(data);
  }

  /**
   * The `system.bootstrapAdmin` entry for the admin key with this hash, built as a leader builds it (see
   * BootstrapAdminProposer): what a state that needs the bootstrap admin applies first.
   */
  bootstrapAdmin(keyHash: string = ADMIN_KEY_HASH): Entry {
    this.advance(1);
    return this.raw(
      encodeCommand(
        bootstrapAdminCommand(keyHash, { timestampMs: this.nowMs, monotonicMs: this.monotonicMs }),
      ),
    );
  }

  /** The `system.canonicalLimits` entry a leader of `term` proposes (CanonicalLimitsProposer). */
  canonicalLimits(limits: Partial<CanonicalLimits>, term = this.term): Entry {
    this.advance(1);
    return this.raw(
      encodeCommand(
        canonicalLimitsCommand(resolveLimits(limits), term, {
          timestampMs: this.nowMs,
          monotonicMs: this.monotonicMs,
        }),
      ),
    );
  }

  /** Moves both of the leader's clocks on. */
  advance(ms: number): void {
    this.nowMs += ms;
    this.monotonicMs += ms;
  }

  noop(): Entry {
    return this.push({ type: "noop", data: new Uint8Array(0) });
  }

  raw(data: Uint8Array): Entry {
    return this.push({ type: "normal", data });
  }

  private push(entry: Pick<Entry, "type" | "data">): Entry {
    const full: Entry = { index: this.entries.length + 1, term: this.term, ...entry };
    this.entries.push(full);
    return full;
  }
}

/** The outcome of a command result, failing the test if the entry was not a command. */
export function outcomeOf(result: ApplyResult): CommandOutcome {
  if (result.type !== "command") throw new Error(`entry ${result.entryIndex} applied as ${result.type}`);
  return result.outcome;
}

/** The result of a committed command, failing the test with the error otherwise. */
export function committed<T = Record<string, unknown>>(result: ApplyResult): T {
  const outcome = outcomeOf(result);
  if (outcome.status !== "committed") {
    throw new Error(
      `entry ${outcome.index} failed: ${outcome.error.code}/${outcome.error.reason}: ${outcome.error.message}`,
    );
  }
  return outcome.result as T;
}

/** The error of a refused command, failing the test if it committed. */
export function refused(result: ApplyResult): { code: string; reason: string; message: string } {
  const outcome = outcomeOf(result);
  if (outcome.status !== "failed")
    throw new Error(`entry ${outcome.index} committed: ${JSON.stringify(outcome.result)}`);
  return outcome.error;
}

/** A state machine with its own log: each call proposes one command and applies it at once. */
export class Harness {
  readonly log = new LogBuilder();

  constructor(readonly sm: StateMachine) {}

  run(kind: EntryKind, payload: unknown, options: CommandOptions = {}): ApplyResult {
    return this.sm.apply(this.log.command(kind, payload, options));
  }

  ok<T = Record<string, unknown>>(kind: EntryKind, payload: unknown, options: CommandOptions = {}): T {
    return committed<T>(this.run(kind, payload, options));
  }

  fail(
    kind: EntryKind,
    payload: unknown,
    options: CommandOptions = {},
  ): { code: string; reason: string; message: string } {
    return refused(this.run(kind, payload, options));
  }

  /** Applies the bootstrap admin for `keyHash` (ADMIN_KEY's by default), as the cluster's leader proposes it. */
  bootstrapAdmin(keyHash: string = ADMIN_KEY_HASH): ApplyResult {
    return this.sm.apply(this.log.bootstrapAdmin(keyHash));
  }

  /** Moves the leader's clock on without applying anything. */
  advance(ms: number): void {
    this.log.advance(ms);
  }
}
