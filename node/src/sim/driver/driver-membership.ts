import { InvalidArgumentError } from "@keyload/contract";
import { incarnationOf, memberName } from "../../peer/member-name.js";
import { type ConfChange, decodeConfChange } from "../../raft/conf-change.js";
import type { SeededRandom } from "../../raft/seeded-random.js";
import type { ConfState, Entry, NodeId } from "../../raft/types.js";
import type { MembershipProfile } from "../fault-profile.js";
import { InvariantViolation } from "../invariants.js";
import { describeChange, isRemovalOf, MembershipOperator } from "../membership-operator.js";
import { between } from "../random-choices.js";
import { describeError } from "../sim-failure.js";
import type { DriverNode } from "./driver-node.js";
import { PROPOSAL_DEADLINE_MS } from "./driver-workload.js";

/** How often the operator looks, and what it may change (membership-operator.ts). */
const MEMBERSHIP: MembershipProfile = {
  gap: [30, 150],
  changeRate: 0.4,
  removeLeader: 0.3,
  removeLearner: 0.2,
  catchUpSlack: 2,
};

/** The membership changes of a run, for its statistics. */
export interface MembershipCounts {
  joins: number;
  confChanges: number;
  /** New incarnations of lost members promoted to voter, whoever proposed it. */
  rejoins: number;
}

/** What the membership of a driver run sees of it. */
export interface DriverMembershipHost {
  readonly random: SeededRandom;
  nodes(): readonly DriverNode[];
  node(id: NodeId): DriverNode | undefined;
  /** Adds a node that has yet to start, with empty disks, to the run and its network. */
  addNode(id: NodeId): DriverNode;
  start(node: DriverNode): void;
  now(): number;
  schedule(delay: number, work: () => void): void;
  note(node: string, text: string): void;
  violation(error: unknown): void;
  /** Whether the run converges: only repairs and promotions are made then. */
  converging(): boolean;
  /** Counts `answer`, a call `node`'s driver took, as waiting until it settles (DriverWorkload). */
  track(node: DriverNode, what: string, answer: Promise<unknown>): void;
}

/**
 * The membership of a driver run: the core simulator's operator, acting through the leader's driver
 * as an administrator's request does; removed members shut down once they apply their removal; disks
 * lost for good, each member replaced by a new incarnation of its name (`name~token`), as a voter
 * whose data is gone comes back (member-identity.ts).
 */
export class DriverMembership {
  readonly counts: MembershipCounts = { joins: 0, confChanges: 0, rejoins: 0 };
  private readonly operator: MembershipOperator;
  /** Members whose disk was lost. */
  private readonly lost = new Set<NodeId>();
  /** Per name whose member lost its disk, the ID of its latest incarnation. */
  private readonly incarnations = new Map<string, NodeId>();

  constructor(
    private readonly host: DriverMembershipHost,
    random: SeededRandom,
  ) {
    this.operator = new MembershipOperator(MEMBERSHIP, random, (id) => {
      const driver = host.node(id)?.driver;
      return driver === null || driver === undefined ? null : driver.raft.confState();
    });
  }

  begin(): void {
    this.host.schedule(between(this.host.random, MEMBERSHIP.gap), () => this.operate());
  }

  /**
   * The ID a message addressed to `id` reaches. The peer network routes by member name
   * (member-name.ts), so what was meant for a member that lost its disk reaches the new incarnation of
   * its name, whose core must ignore it.
   */
  addressee(id: NodeId): NodeId {
    return this.lost.has(id) ? (this.incarnations.get(memberName(id)) ?? id) : id;
  }

  /** Whether the member `id`'s disk was lost. */
  isLost(id: NodeId): boolean {
    return this.lost.has(id);
  }

  /** `entry` was applied for the first time anywhere. */
  observeCommitted(entry: Entry): void {
    this.operator.observeCommitted(entry);
    if (entry.type !== "conf") return;
    const change = decodeConfChange(entry.data);
    if (change.type === "promote" && memberName(change.node) !== change.node) this.counts.rejoins++;
  }

  /** `node` applied `entry`: a member that applied its own removal shuts down for good, as etcd's does. */
  observeApplied(node: DriverNode, entry: Entry): void {
    if (isRemovalOf(entry, node.id))
      this.host.schedule(between(this.host.random, [10, 150]), () => this.retire(node));
  }

  /** Whether the operator has nothing left to repair in `conf`. */
  settled(conf: ConfState): boolean {
    return this.operator.settled(conf);
  }

  /**
   * `node`'s disk is lost, if the cluster keeps a quorum of every configuration in play without it:
   * its process dies and never returns under its ID, since a member that forgot its vote or its log
   * could break safety. The voter comes back on the empty disk soon after as a new incarnation of its
   * name, which gets what is still addressed to the lost one; the operator removes the lost one, then
   * adds the new one as a learner and promotes it.
   */
  wipe(node: DriverNode): boolean {
    const { host } = this;
    if (!this.operator.mayWipe(node.id)) return false;
    if (node.running) node.crash(false);
    node.retired = true;
    this.lost.add(node.id);
    this.operator.wiped(node.id);
    host.note(node.id, "disk lost: the member leaves the cluster for good");
    const name = memberName(node.id);
    const next = host.addNode(incarnationOf(name, host.random.nextUint32().toString(16).padStart(8, "0")));
    this.incarnations.set(name, next.id);
    this.operator.started(next.id);
    this.counts.joins++;
    host.schedule(between(host.random, [10, 300]), () => {
      if (next.running || next.retired) return;
      host.note(next.id, "a new incarnation starts on the empty disk, to join as a learner");
      host.start(next);
    });
    return true;
  }

  /** A node removed from the configuration stops for good. */
  private retire(node: DriverNode): void {
    if (node.retired) return;
    if (node.running) node.crash(true);
    node.retired = true;
    this.host.note(node.id, "shut down: removed from the cluster");
  }

  /**
   * The operator looks at the cluster through the leader and has it propose its next change; a node to
   * join starts first.
   */
  private operate(): void {
    const { host } = this;
    host.schedule(between(host.random, MEMBERSHIP.gap), () => this.operate());
    const leader = host
      .nodes()
      .find((n) => n.driver?.isLeader() === true && n.owner !== null && n.owner.pausedUntil <= host.now());
    if (leader === undefined) return;
    const driver = leader.driver!;
    const { conf, commit, progress } = driver.raft.status();
    const action = this.operator.next({ id: leader.id, conf, commit, progress }, host.converging());
    if (action === null) return;
    let change: ConfChange;
    if (action.kind === "join") {
      const node = host.addNode(`n${host.nodes().length + 1}`);
      this.operator.started(node.id);
      this.counts.joins++;
      host.note(node.id, "a node with empty disks starts, to join as a learner");
      host.start(node);
      change = { type: "add-learner", node: node.id };
    } else {
      change = action.change;
    }
    this.counts.confChanges++;
    const before = driver.raft.status().lastIndex;
    // Under a deadline, as the admin routes propose it.
    const deadline = new AbortController();
    const done = driver.proposeConfChange(change, deadline.signal);
    const after = driver.raft.status().lastIndex;
    if (after > before) {
      this.operator.accepted(change, after);
      host.schedule(PROPOSAL_DEADLINE_MS, () => deadline.abort());
      host.track(leader, describeChange(change), done);
    }
    host.note(leader.id, `${describeChange(change)}${after > before ? ` -> ${after}` : " refused"}`);
    done.catch((error: unknown) => {
      if (error instanceof InvalidArgumentError)
        host.violation(
          new InvariantViolation(
            "core-contract",
            `${leader.id} refused ${describeChange(change)} as invalid: ${describeError(error)}`,
          ),
        );
    });
  }
}
