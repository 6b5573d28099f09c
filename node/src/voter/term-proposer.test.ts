import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { PeerTransport } from "../peer/peer-transport.js";
import { canonicalLimitsCommand } from "../state/canonical-limits-command.js";
import { decodeCommand } from "../state/command-envelope.js";
import { DEFAULT_LIMITS } from "../state/limits.js";
import type { LeaderClock } from "./leader-clock.js";
import { LeaderStamper } from "./leader-stamper.js";
import type { RaftDriver } from "./raft-driver.js";
import { TermProposer } from "./term-proposer.js";

afterEach(() => {
  vi.useRealTimers();
});

const HOUR = 60 * 60 * 1000;

describe("a voter's own proposals", () => {
  it("carry the wall-clock time a majority of the voters reached, as clients' commands do", async () => {
    const now = 1_700_000_000_000;
    const clock: LeaderClock = { wallMs: () => now, monotonicMs: () => 5_000 };
    const driver = {
      isLeader: () => true,
      status: () => ({
        id: "voter1",
        term: 7,
        conf: { voters: ["voter1", "voter2", "voter3"], learners: [] },
      }),
      propose: vi.fn(async () => [] as never[]),
    };
    // The peers' clocks, as their handshakes told them: one ahead by an hour cannot set it.
    const walls: Record<string, number> = { voter2: now - 2_000, voter3: now + HOUR };
    const transport = { peerInfo: (name: string) => ({ wallMs: walls[name] ?? null }) };
    const stamper = new LeaderStamper(
      driver as unknown as RaftDriver,
      transport as unknown as PeerTransport,
      clock,
    );
    vi.useFakeTimers();
    const proposer = new TermProposer(
      {
        driver: driver as unknown as RaftDriver,
        stateMachine: { applied: () => ({ index: 3, term: 7 }) },
        logger: pino({ level: "silent" }),
        checkIntervalMs: 100,
        proposeTimeoutMs: 1_000,
        stamper,
      },
      {
        what: "configured canonical limits",
        wanted: () => true,
        command: (term, stamps) => canonicalLimitsCommand(DEFAULT_LIMITS, term, stamps),
      },
    );
    proposer.start();
    await vi.advanceTimersByTimeAsync(100);
    proposer.stop();
    expect(driver.propose).toHaveBeenCalledTimes(1);
    const [data] = driver.propose.mock.calls[0] as unknown as [Uint8Array[]];
    expect(decodeCommand(data[0]!)).toMatchObject({
      commandId: expect.stringMatching(/^system\.canonical-limits\.t7\./),
      timestampMs: now,
      monotonicMs: 5_000,
      quorumWallMs: now,
    });
  });
});
