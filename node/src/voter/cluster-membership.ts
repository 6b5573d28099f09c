import {
  type ClusterLeaderTransfer,
  type ClusterMemberChange,
  type ClusterMembers,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnavailableError,
  UnknownWriteOutcomeError,
} from "@keyload/contract";
import { isMemberId, memberName } from "../peer/member-name.js";
import type { ConfChange } from "../raft/conf-change.js";
import type { DriverTimers } from "./driver-timers.js";
import type { Member, RaftDriver } from "./raft-driver.js";

const voters = (members: readonly Member[]): Member[] => members.filter((m) => m.role === "voter");

/** What a joining member's own configuration says of it: none held yet, or it is a learner there. */
export type JoinerHolds = "none" | "learner";

/**
 * What a join request did: the role the member has now (`removed`: it was a member, and is no longer),
 * and the changes made for it.
 */
export interface MemberJoin {
  readonly role: "learner" | "voter" | "removed";
  readonly changes: readonly string[];
}

/** The share of the leader's log a learner must hold to be promoted (etcd's readyPercentThreshold). */
const PROMOTE_MATCH_SHARE = 0.9;

export interface ClusterMembershipOptions {
  /** Whether a voter of this name is configured (itself or a peer): the only names the network reaches. */
  readonly isKnownName: (name: string) => boolean;
  /**
   * The member ID of the process this voter's own connection reaches at the configured address of the
   * voter `name` (PeerInfo.memberId), or null while none is connected.
   */
  readonly memberAt: (name: string) => string | null;
  /** How far a learner's log may trail the leader's for it to be promoted. */
  readonly maxPromoteLagEntries: number;
  /**
   * How long a change may take to commit and apply before its outcome is reported unknown, and a
   * leadership transfer to complete.
   */
  readonly deadlineMs: number;
  /** The timers the deadline runs on: a simulation's; by default the deadline is Node's own. */
  readonly timers?: DriverTimers;
}

/**
 * The administration of the Raft configuration, as etcd's `member add --learner`, `member promote` and
 * `member remove` do it: one change at a time through the leader, each answered once applied. A change
 * names the configuration it wants, so asking again is safe: adding a member already there, promoting a
 * voter or removing a member that is gone answers `changed: false` without proposing anything. Every
 * change, and so every such answer, comes from a leader that has just confirmed it leads (a follower
 * answers Unavailable with the leader hint): a follower's configuration, or a deposed leader's, may
 * trail the cluster's and would answer for a configuration that no longer holds.
 */
export class ClusterMembership {
  constructor(
    private readonly driver: RaftDriver,
    private readonly options: ClusterMembershipOptions,
  ) {}

  /** The configuration this voter has applied; with each member's match index on the leader. */
  list(): ClusterMembers {
    const status = this.driver.status();
    const leading = this.driver.isLeader();
    return {
      leader: status.leader,
      lastIndex: leading ? status.lastIndex : null,
      members: this.driver.members().map((m) => ({
        memberId: m.id,
        name: m.name,
        role: m.role,
        ...(leading && m.match !== undefined ? { match: m.match } : {}),
      })),
    };
  }

  /** Adds a new member as a learner: it receives the log and counts for nothing until promoted. */
  async addLearner(memberId: string): Promise<ClusterMemberChange> {
    this.checkMemberId(memberId);
    const members = await this.leadersMembers();
    const present = members.find((m) => m.id === memberId);
    if (present !== undefined) return { memberId, role: present.role, changed: false };
    const name = memberName(memberId);
    const sameName = members.find((m) => m.name === name);
    if (sameName !== undefined) {
      // The network reaches voters by name: two incarnations of one name cannot both be members.
      throw new FailedPreconditionError(
        `${sameName.id} still holds the name ${name}: remove it before adding ${memberId}`,
        { reason: "MemberNameInUse", details: { memberId: sameName.id } },
      );
    }
    await this.change({ type: "add-learner", node: memberId });
    return { memberId, role: "learner", changed: true };
  }

  /**
   * What a new member asks for itself (member-join.ts), on the leader: to be added as a learner and, once
   * caught up, promoted. Each call makes at most the next change and answers the role the member has
   * after it, so asking until `voter` completes the join; every refusal (a quorum not kept, a learner
   * behind) is typed. `held` is what the member's own configuration says of it: a member that held one
   * naming it a learner, absent from this later one, was removed, and is told so rather than added
   * again. A new member is added only once this leader's own connection to its name's configured
   * address reaches it (not another process claiming the name elsewhere), and a member of its name is
   * removed first, once it has not been heard from lately: that address now answers as the new member,
   * so the old one's storage is gone.
   */
  async join(memberId: string, held: JoinerHolds): Promise<MemberJoin> {
    this.checkMemberId(memberId);
    const members = await this.leadersMembers();
    const present = members.find((m) => m.id === memberId);
    if (present?.role === "voter") return { role: "voter", changes: [] };
    if (present?.role === "learner") {
      const { changed } = await this.promote(memberId);
      return { role: "voter", changes: changed ? [`promoted ${memberId}`] : [] };
    }
    if (held === "learner") return { role: "removed", changes: [] };
    const name = memberName(memberId);
    const reached = this.options.memberAt(name);
    if (reached !== memberId) {
      throw new FailedPreconditionError(
        `${name}'s configured address ${reached === null ? "is not reached yet" : `answers as ${reached}`}, not as ${memberId}: it joins once it does`,
        { reason: "JoinerNotAtAddress" },
      );
    }
    const old = members.find((m) => m.name === name);
    if (old?.active === true) {
      throw new FailedPreconditionError(
        `${old.id} still holds the name ${old.name} and was heard from lately: ${memberId} joins once it is not`,
        { reason: "MemberNameInUse", details: { memberId: old.id } },
      );
    }
    const changes: string[] = [];
    if (old !== undefined && (await this.remove(old.id)).changed) changes.push(`removed ${old.id}`);
    if ((await this.addLearner(memberId)).changed) changes.push(`added ${memberId} as a learner`);
    return { role: "learner", changes };
  }

  /** Makes a learner that has caught up a voter. */
  async promote(memberId: string): Promise<ClusterMemberChange> {
    this.checkMemberId(memberId);
    const members = await this.leadersMembers();
    const member = members.find((m) => m.id === memberId);
    if (member === undefined) {
      throw new NotFoundError(`${memberId} is not a member`, { reason: "MemberNotFound" });
    }
    if (member.role === "voter") return { memberId, role: "voter", changed: false };
    this.checkCaughtUp(member);
    this.checkQuorumKept([...voters(members), member], "promoting");
    await this.change({ type: "promote", node: memberId });
    return { memberId, role: "voter", changed: true };
  }

  /** Removes a member; removing the leader hands leadership to another voter first. */
  async remove(memberId: string): Promise<ClusterMemberChange> {
    this.checkMemberId(memberId);
    const members = await this.leadersMembers();
    if (!members.some((m) => m.id === memberId)) return { memberId, role: null, changed: false };
    this.checkQuorumKept(
      voters(members).filter((m) => m.id !== memberId),
      "removing",
    );
    await this.change({ type: "remove", node: memberId });
    return { memberId, role: null, changed: true };
  }

  /**
   * Hands leadership to a voter, named by its member ID or its name, through the leader (a follower
   * answers Unavailable with the leader hint), and answers once this voter follows it. Asking for the
   * voter that leads already answers `changed: false`.
   */
  async transferLeader(memberIdOrName: string): Promise<ClusterLeaderTransfer> {
    this.checkMemberId(memberIdOrName);
    const members = await this.leadersMembers();
    const target =
      members.find((m) => m.id === memberIdOrName) ?? members.find((m) => m.name === memberIdOrName);
    if (target === undefined) {
      throw new NotFoundError(`${memberIdOrName} is not a member`, { reason: "MemberNotFound" });
    }
    if (target.role !== "voter") {
      throw new FailedPreconditionError(`${target.id} is a learner: only a voter can lead`, {
        reason: "NotAVoter",
      });
    }
    const status = this.driver.status();
    if (status.role === "leader" && status.id === target.id) {
      // Also gives up a transfer under way to another voter (etcd-raft's transfer to self).
      await this.driver.transferLeadershipTo(target.id, this.options.deadlineMs);
      return { leader: target.id, changed: false };
    }
    if (!(await this.driver.transferLeadershipTo(target.id, this.options.deadlineMs))) {
      throw new UnavailableError(
        `${target.id} did not take over leadership within ${this.options.deadlineMs} ms; asking again is safe`,
        { reason: "LeaderTransferTimeout" },
      );
    }
    return { leader: target.id, changed: true };
  }

  private checkMemberId(memberId: string): void {
    if (!isMemberId(memberId)) {
      throw new InvalidArgumentError(
        "a member ID is a voter name (1-64 of [A-Za-z0-9._-]), maybe followed by ~ and 8 hex digits",
        { reason: "InvalidMemberId" },
      );
    }
    const name = memberName(memberId);
    if (!this.options.isKnownName(name)) {
      throw new InvalidArgumentError(`no voter named ${name} is configured`, {
        reason: "UnknownVoterName",
      });
    }
  }

  /**
   * The configuration as the cluster holds it now: this voter must lead (else Unavailable, with the
   * leader hint when it knows one), and a read barrier confirms it still does and has applied every
   * configuration committed before.
   */
  private async leadersMembers(): Promise<readonly Member[]> {
    const { leader } = this.driver.status();
    if (!this.driver.isLeader()) {
      throw new UnavailableError(
        leader === null ? "no leader is known; nothing was changed" : `${leader} leads; nothing was changed`,
        {
          reason: leader === null ? "NoLeader" : "NotLeader",
          details: leader === null ? {} : { leaderId: leader },
        },
      );
    }
    await this.driver.readBarrier();
    return this.driver.members();
  }

  /**
   * A learner is promoted only once it holds the leader's log but for a little: within
   * `maxPromoteLagEntries` and 90 % of it (etcd's test), and at least one entry, so that one holding
   * nothing is never counted toward a quorum, however short the log.
   */
  private checkCaughtUp(learner: Member): void {
    const lastIndex = this.driver.status().lastIndex;
    const match = learner.match ?? 0;
    const behind =
      match === 0 ||
      lastIndex - match > this.options.maxPromoteLagEntries ||
      match < lastIndex * PROMOTE_MATCH_SHARE;
    if (behind) {
      throw new FailedPreconditionError(
        `${learner.id} holds the log up to ${match} of ${lastIndex}: promote it once it has caught up`,
        { reason: "LearnerBehind", details: { match, lastIndex } },
      );
    }
  }

  /**
   * A change is made only if the voters it leaves include a quorum the leader has heard from lately, as
   * etcd's strict reconfiguration check does: removing a voter while another is down, or promoting a
   * learner that is down, would otherwise leave a cluster that can commit nothing, this change's own
   * undoing included, until the missing voters return.
   */
  private checkQuorumKept(after: readonly Member[], doing: string): void {
    const quorum = Math.floor(after.length / 2) + 1;
    const active = after.filter((m) => m.active === true).length;
    if (active < quorum) {
      const quiet = after.filter((m) => m.active !== true).map((m) => m.id);
      throw new FailedPreconditionError(
        `${doing} it would leave ${after.length} voters of which ${active} are active, short of a quorum of ${quorum} (not heard from: ${quiet.join(", ")}); bring them back first`,
        { reason: "NotEnoughActiveVoters", details: { voters: after.length, active, quorum } },
      );
    }
  }

  private async change(change: ConfChange): Promise<void> {
    const { deadlineMs, timers } = this.options;
    const deadline = new AbortController();
    const timer = timers?.setTimeout(() => deadline.abort(), deadlineMs);
    try {
      await this.driver.proposeConfChange(
        change,
        timers === undefined ? AbortSignal.timeout(deadlineMs) : deadline.signal,
      );
    } catch (err) {
      if (!(err instanceof UnknownWriteOutcomeError)) throw err;
      throw new UnknownWriteOutcomeError(`${unknownChange(err.reason)}; asking again is safe`, {
        reason: err.reason,
      });
    } finally {
      timers?.clearTimeout(timer);
    }
  }
}

/** Why a membership change's outcome is unknown, by the reason its wait ended. */
function unknownChange(reason: string | undefined): string {
  if (reason === "ReplicationDeadline") return "the membership change was not applied in time";
  if (reason === "LeadershipChanged") return "leadership changed before the membership change was confirmed";
  if (reason === "ShuttingDown") return "the voter stopped before the membership change was confirmed";
  return "the membership change's outcome is unknown";
}
