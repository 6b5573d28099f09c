import type { RaftOptions } from "../../raft/raft-config.js";
import type { Range } from "../fault-profile.js";

/** What a driver run's load and faults lean toward (`pnpm sim --profile NAME`). */
export interface DriverProfile {
  readonly name: string;
  /** Simulated milliseconds between two client operations. */
  readonly clientGap: Range;
  /** The chance that a fault strikes the leader, when there is one, rather than any running node. */
  readonly leaderBias: number;
  /** The chance that a fault isolates its target rather than being any of the faults. */
  readonly isolateBias: number;
  /** Options each driver's core takes over those the driver gives it. */
  readonly core: Partial<Pick<RaftOptions, "maxSizePerMsg" | "maxInflightMsgs">>;
  /** The chance that a node's crash loses its disk for good, when the cluster can spare it. */
  readonly wipeRate: number;
  /**
   * Who brings a new member in: the operator, which also changes the membership on its own, or the new
   * members themselves, asking the leader (member-joiner.ts), with no operator acting.
   */
  readonly joins: "operator" | "new-members";
}

/** Every fault alike, on the driver's own core options. */
export const DRIVER_PROFILE: DriverProfile = {
  name: "driver",
  clientGap: [2, 12],
  leaderBias: 0.5,
  isolateBias: 0,
  core: {},
  wipeRate: 0.15,
  joins: "operator",
};

/**
 * Raft's Figure 8: leaders isolated far more often than anything else happens, which lets each keep
 * appending entries of its term that no one else has; clients writing to them twice as often; one entry
 * per append and one append in flight, so logs part at every index. A core that commits an earlier
 * term's entry by counting its replicas is caught here, not in the default profile.
 */
export const DRIVER_FIGURE_EIGHT_PROFILE: DriverProfile = {
  name: "driver-figure-eight",
  clientGap: [1, 6],
  leaderBias: 0.9,
  isolateBias: 0.6,
  core: { maxSizePerMsg: 1, maxInflightMsgs: 1 },
  wipeRate: 0.15,
  joins: "operator",
};

/**
 * Voters that lose their disks bring themselves back (docs/decisions/0041): no operator acts; each
 * new incarnation asks the leader to remove the lost member of its name, add it as a learner and
 * promote it once caught up, through crashes, pauses, partitions and leader changes. Disks are lost
 * twice as often as in the default profile.
 */
export const DRIVER_REJOIN_PROFILE: DriverProfile = {
  ...DRIVER_PROFILE,
  name: "driver-rejoin",
  wipeRate: 0.3,
  joins: "new-members",
};

export const DRIVER_PROFILES: Readonly<Record<string, DriverProfile>> = {
  [DRIVER_PROFILE.name]: DRIVER_PROFILE,
  [DRIVER_FIGURE_EIGHT_PROFILE.name]: DRIVER_FIGURE_EIGHT_PROFILE,
  [DRIVER_REJOIN_PROFILE.name]: DRIVER_REJOIN_PROFILE,
};
