import type { Logger } from "pino";
import { memberName } from "../../peer/member-name.js";
import { ClusterMembership } from "../../voter/cluster-membership.js";
import type { DriverTimers } from "../../voter/driver-timers.js";
import { JOIN_CHANNEL, joinHandler, memberReachedAt } from "../../voter/member-join.js";
import { MemberJoiner } from "../../voter/member-joiner.js";
import type { RaftDriver } from "../../voter/raft-driver.js";
import type { SimPeerEndpoint } from "./sim-peer-requests.js";

/** How a run shapes its voters' joins. */
export interface MemberJoinTuning {
  /** The voter names of the cluster's configuration (`Cluster.Voters`). */
  readonly names: readonly string[];
  readonly electionTimeoutMs: number;
  /** A membership change's deadline, as the voter's replication deadline. */
  readonly deadlineMs: number;
  /** How far a learner may trail the leader's log and be promoted. */
  readonly maxPromoteLagEntries: number;
}

/**
 * One process life's part in new members' joins, wired as voter.ts wires it: the join channel's
 * handler over the life's ClusterMembership, which acts while it leads, and the MemberJoiner, which
 * asks while this life is a new member or a learner. Only the timers and the peer network are the run's.
 */
export class DriverMemberJoin {
  private readonly joiner: MemberJoiner;

  constructor(
    driver: RaftDriver,
    endpoint: SimPeerEndpoint,
    timers: DriverTimers,
    logger: Logger,
    tuning: MemberJoinTuning,
  ) {
    const membership = new ClusterMembership(driver, {
      isKnownName: (name) => tuning.names.includes(name),
      memberAt: memberReachedAt(endpoint),
      maxPromoteLagEntries: tuning.maxPromoteLagEntries,
      deadlineMs: tuning.deadlineMs,
      timers,
    });
    endpoint.handle(JOIN_CHANNEL, joinHandler(membership, logger));
    const own = memberName(driver.status().id);
    this.joiner = new MemberJoiner({
      driver,
      transport: endpoint,
      peers: tuning.names.filter((name) => name !== own),
      logger,
      intervalMs: tuning.electionTimeoutMs,
      requestTimeoutMs: 2 * tuning.deadlineMs + tuning.electionTimeoutMs,
      timers,
    });
    this.joiner.start();
  }

  stop(): void {
    this.joiner.stop();
  }
}
