import { memberName } from "../peer/member-name.js";
import type { PeerTransport } from "../peer/peer-transport.js";
import type { LeaderStamps } from "../state/bootstrap-admin-command.js";
import type { LeaderClock } from "./leader-clock.js";
import { quorumWallMs } from "./quorum-wall-clock.js";
import type { RaftDriver } from "./raft-driver.js";

/**
 * The stamps a leader puts on each command it proposes, a client's or its own: its wall and monotonic
 * clocks, and the wall-clock time a majority of the voters had reached as far as it knows, which lets
 * the replicated clock catch up across a leader change (docs/decisions/0035). Every command needs all
 * three: the first of a term sets how far the clock moves, whichever command that is.
 */
export class LeaderStamper {
  constructor(
    private readonly driver: Pick<RaftDriver, "status">,
    private readonly transport: Pick<PeerTransport, "peerInfo">,
    readonly clock: LeaderClock,
  ) {}

  stamps(): LeaderStamps {
    const timestampMs = this.clock.wallMs();
    const monotonicMs = this.clock.monotonicMs();
    const { id, conf } = this.driver.status();
    const quorum = quorumWallMs(
      id,
      timestampMs,
      conf.voters,
      (voter) => this.transport.peerInfo(memberName(voter))?.wallMs ?? null,
    );
    return { timestampMs, monotonicMs, ...(quorum === undefined ? {} : { quorumWallMs: quorum }) };
  }
}
