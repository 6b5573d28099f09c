import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { PeerTransport } from "../peer/peer-transport.js";
import type { Entry } from "../raft/types.js";
import { CommandPayload } from "../requests/command-payload.js";
import type { ApplyResult } from "../state/apply-result.js";
import { bootstrapAdminCommand } from "../state/bootstrap-admin-command.js";
import { decodeCommand, encodeCommand } from "../state/command-envelope.js";
import type { LeaseResult } from "../state/queues.js";
import type { StateMachine } from "../state/state-machine.js";
import { ADMIN_KEY_HASH, committed, TempStates } from "../state/test-fixtures/state-fixtures.js";
import { type CommandResult, CommandRouter, type VoterCommand } from "./command-router.js";
import type { LeaderClock } from "./leader-clock.js";
import type { RaftDriver } from "./raft-driver.js";

const HOUR = 60 * 60 * 1000;
const VISIBILITY_MS = 30_000;

/** The leader's clocks as a test sets them. */
class TestClock implements LeaderClock {
  wall = 1_700_000_000_000;
  monotonic = 5_000;
  wallMs(): number {
    return this.wall;
  }
  monotonicMs(): number {
    return this.monotonic;
  }
  /** Real time passing: both clocks move. */
  pass(ms: number): void {
    this.wall += ms;
    this.monotonic += ms;
  }
}

/** A leader's Raft log that commits and applies each proposal at once, in the term the test sets. */
class ApplyingLog {
  term = 1;
  readonly entries: Entry[] = [];
  constructor(private readonly sm: StateMachine) {}
  isLeader(): boolean {
    return true;
  }
  status(): { id: string; conf: { voters: string[] } } {
    return { id: "voter1", conf: { voters: ["voter1", "voter2", "voter3"] } };
  }
  async propose(data: readonly Uint8Array[]): Promise<ApplyResult[]> {
    const entries = data.map(
      (d): Entry => ({ index: this.entries.length + 1, term: this.term, type: "normal", data: d }),
    );
    this.entries.push(...entries);
    return this.sm.applyBatch(entries);
  }
}

/** The peers' wall clocks as their handshakes told the leader: unknown until a test sets them. */
class TestPeers {
  readonly wallMs = new Map<string, () => number>();
  peerInfo(name: string): { connected: boolean; httpUrl: null; wallMs: number | null } {
    return { connected: true, httpUrl: null, wallMs: this.wallMs.get(name)?.() ?? null };
  }
}

let temp: TempStates;
let clock: TestClock;
let peers: TestPeers;
let log: ApplyingLog;
let router: CommandRouter;
let nextId = 1;
beforeEach(async () => {
  temp = new TempStates();
  clock = new TestClock();
  peers = new TestPeers();
  log = new ApplyingLog(temp.create("s"));
  // The cluster's admin, whose key the commands below are sent with.
  const stamps = { timestampMs: clock.wall, monotonicMs: clock.monotonic };
  committed((await log.propose([encodeCommand(bootstrapAdminCommand(ADMIN_KEY_HASH, stamps))]))[0]!);
  router = new CommandRouter({
    driver: log as unknown as RaftDriver,
    transport: peers as unknown as PeerTransport,
    logger: pino({ level: "silent" }),
    forwardTimeoutMs: 1_000,
    leaderWaitMs: 1_000,
    clock,
  });
});
afterEach(() => temp.cleanup());

async function send(
  kind: VoterCommand["kind"],
  body: unknown,
  queueParams: VoterCommand["params"],
): Promise<CommandResult> {
  const [outcome] = await router.replicate(
    [
      {
        commandId: `c${nextId++}`,
        kind,
        lane: "data",
        params: queueParams,
        payload: CommandPayload.fromText(JSON.stringify(body)),
        tenant: "system",
        principal: "admin",
        keyId: "bootstrap",
      },
    ],
    new AbortController().signal,
    () => false,
  );
  if (!outcome!.ok) throw outcome!.error;
  return outcome!.value;
}

const jobs = { queue: "jobs" };
const lease = async () =>
  ((await send("queue.lease", { visibilityTimeoutMs: VISIBILITY_MS }, jobs)).result as LeaseResult).messages;

describe("the leader's stamps", () => {
  it("carry both of the leader's clocks as the clock source reads them", async () => {
    clock.wall = 1_800_000_000_000;
    clock.monotonic = 123_456;
    await send("queue.enqueue", { body: 1 }, jobs);
    expect(decodeCommand(log.entries.at(-1)!.data)).toMatchObject({
      timestampMs: 1_800_000_000_000,
      monotonicMs: 123_456,
    });
  });

  it("hold a lease for its time when the leader's wall clock leaps hours ahead", async () => {
    await send("queue.enqueue", { body: 1 }, jobs);
    expect(await lease()).toHaveLength(1);
    clock.pass(10_000);
    clock.wall += 3 * HOUR;
    expect(await lease()).toEqual([]);
    clock.pass(VISIBILITY_MS - 10_000 - 1);
    expect(await lease()).toEqual([]);
    clock.pass(1);
    expect(await lease()).toEqual([expect.objectContaining({ attempts: 2 })]);
  });

  it("let a lease run out on time when the leader's wall clock steps back an hour", async () => {
    await send("queue.enqueue", { body: 1 }, jobs);
    expect(await lease()).toHaveLength(1);
    clock.pass(1_000);
    clock.wall -= HOUR;
    expect(await lease()).toEqual([]);
    clock.pass(VISIBILITY_MS - 1_000);
    expect(await lease()).toEqual([expect.objectContaining({ attempts: 2 })]);
  });

  it("let a new leader whose wall clock leapt ahead take no more than one bounded step off a lease", async () => {
    await send("queue.enqueue", { body: 1 }, jobs);
    expect(await lease()).toHaveLength(1);
    // Another process leads the next term: its monotonic clock has another origin.
    log.term = 2;
    clock.monotonic = 77;
    clock.pass(1_000);
    clock.wall += 3 * HOUR;
    expect(await lease()).toEqual([]);
    clock.pass(10_000);
    expect(await lease()).toEqual([]);
  });

  it("carry the time a majority of the voters' clocks reached, as far as the leader knows them", async () => {
    await send("queue.enqueue", { body: 1 }, jobs);
    expect(decodeCommand(log.entries.at(-1)!.data).quorumWallMs).toBeUndefined();
    peers.wallMs.set("voter2", () => clock.wall - 40);
    await send("queue.enqueue", { body: 2 }, jobs);
    expect(decodeCommand(log.entries.at(-1)!.data).quorumWallMs).toBe(clock.wall - 40);
    peers.wallMs.set("voter3", () => clock.wall + HOUR);
    await send("queue.enqueue", { body: 3 }, jobs);
    expect(decodeCommand(log.entries.at(-1)!.data).quorumWallMs).toBe(clock.wall);
  });

  it("let a new leader move the clock over a whole cluster's downtime when a majority's clocks agree", async () => {
    peers.wallMs.set("voter2", () => clock.wall);
    peers.wallMs.set("voter3", () => clock.wall);
    await send("queue.enqueue", { body: 1 }, jobs);
    const first = (await send("queue.lease", { visibilityTimeoutMs: VISIBILITY_MS }, jobs))
      .result as LeaseResult;
    expect(first.leaseExpiresAtMs).toBe(clock.wall + VISIBILITY_MS);
    // Every voter stopped for three hours, then a new term's leader in a new process.
    log.term = 2;
    clock.monotonic = 77;
    clock.wall += 3 * HOUR;
    const again = (await send("queue.lease", { visibilityTimeoutMs: VISIBILITY_MS }, jobs))
      .result as LeaseResult;
    expect(again.messages).toEqual([expect.objectContaining({ attempts: 2 })]);
    expect(again.leaseExpiresAtMs).toBe(clock.wall + VISIBILITY_MS);
  });

  it("let no single clock ahead of the others move the clock on at a new term", async () => {
    let leap = 0;
    peers.wallMs.set("voter2", () => clock.wall - leap);
    peers.wallMs.set("voter3", () => clock.wall - leap);
    await send("queue.enqueue", { body: 1 }, jobs);
    expect(await lease()).toHaveLength(1);
    // The next term's leader's wall clock is three hours ahead of the other two.
    log.term = 2;
    clock.monotonic = 77;
    leap = 3 * HOUR;
    clock.wall += leap;
    clock.pass(1_000);
    expect(await lease()).toEqual([]);
    clock.pass(VISIBILITY_MS - 1_000 - 1);
    expect(await lease()).toEqual([]);
    clock.pass(1);
    expect(await lease()).toEqual([expect.objectContaining({ attempts: 2 })]);
  });
});
