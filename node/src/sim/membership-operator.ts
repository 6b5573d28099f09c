import { applyConfChange, type ConfChange, decodeConfChange } from "../raft/conf-change.js";
import type { ConfState, Entry, NodeId, SeededRandom } from "../raft/index.js";
import type { MembershipProfile } from "./fault-profile.js";

/** The operator keeps at most this many voters. */
export const MAX_VOTERS = 5;
/** Voters and learners together: room for one learner on its way to a full set of voters. */
const MAX_MEMBERS = MAX_VOTERS + 1;

/** What the operator reads from the leader it acts through. */
export interface LeaderView {
  readonly id: NodeId;
  /** The configuration the leader has applied. */
  readonly conf: ConfState;
  readonly commit: number;
  /** Each member's match index, as the leader's `status().progress` gives it. */
  readonly progress: Readonly<Record<NodeId, { readonly match: number }>>;
}

export type MembershipAction =
  | { readonly kind: "propose"; readonly change: ConfChange }
  /** Start a fresh node (a new ID, empty storage, no configuration), then propose it as a learner. */
  | { readonly kind: "join" };

/**
 * The cluster's operator, as an administrator drives etcd: one change at a time through the leader,
 * looking again later when a change is refused (an earlier one is still pending, or there is no
 * leader). It repairs first: a node whose disk was lost never returns under its ID, so it is removed
 * and a fresh node joins in its place, as a learner promoted once caught up. Then, while faults go
 * on, it makes changes of its own: new nodes join, voters (the leader too) and learners are removed.
 *
 * A change must leave the cluster able to elect a leader whatever happens next (`keepsQuorum`). A
 * node applies a change only once it hears it committed, which a crash or a lost message can delay
 * indefinitely, and a node that applied its own removal shuts down: so only voters of both
 * configurations that are up and have applied the current one are counted on, and they must make a
 * quorum of both (etcd's rule, not to remove what would leave fewer voters up than a quorum, is the
 * half of this about the new configuration). The voters stay between two and five.
 *
 * It says which disks may be lost (`mayWipe`) by the same rule, over the committed configuration and
 * every change still in play: a lost quorum could never commit the removal that repairs it.
 *
 * Its view of the membership is the committed log (`observeCommitted`), as every node applies it.
 */
export class MembershipOperator {
  private committed: ConfState = { voters: [] };
  /** Changes a leader accepted whose index is not committed yet: each may still take effect. */
  private inFlight: { readonly index: number; readonly change: ConfChange }[] = [];
  private readonly lost = new Set<NodeId>();
  /** Fresh nodes started but never yet in a committed configuration. */
  private joining: NodeId[] = [];
  /** Lost members not yet replaced by a fresh node. */
  private owed = 0;

  /** `applied` gives the configuration a node has applied, or null while it is down. */
  constructor(
    private readonly profile: MembershipProfile,
    private readonly random: SeededRandom,
    private readonly applied: (id: NodeId) => ConfState | null,
  ) {}

  /** The configuration of the committed log. */
  get conf(): ConfState {
    return this.committed;
  }

  /** The next committed entry, in index order (each index once). */
  observeCommitted(entry: Entry): void {
    this.inFlight = this.inFlight.filter((p) => p.index > entry.index);
    if (entry.type !== "conf") return;
    this.committed = applyConfChange(this.committed, decodeConfChange(entry.data));
    this.joining = this.joining.filter((id) => !isMember(this.committed, id));
  }

  /** A leader accepted `change` at `index`. */
  accepted(change: ConfChange, index: number): void {
    this.inFlight.push({ index, change });
  }

  /** A fresh node was started after a `join` action. */
  started(id: NodeId): void {
    this.joining.push(id);
    if (this.owed > 0) this.owed--;
  }

  /**
   * Whether `id`'s disk may be lost for good: the committed configuration, and every change a leader
   * accepted that may still take effect, keep a quorum without it (see `keepsQuorum`).
   */
  mayWipe(id: NodeId): boolean {
    if (!isMember(this.committed, id) || this.lost.has(id)) return false;
    const current = this.current(this.committed);
    const kept = (v: NodeId): boolean => v !== id && current(v);
    const next = [this.committed, ...this.inFlight.map((p) => applyConfChange(this.committed, p.change))];
    return next.every((conf) => bothKeepQuorum(this.committed.voters, conf.voters, kept));
  }

  /** `id` lost its disk: it must leave, and a fresh node must take its place. */
  wiped(id: NodeId): void {
    this.lost.add(id);
    this.owed++;
  }

  /**
   * The next step given what the leader has applied, or null when there is nothing to do now. While
   * `converging` only repairs and promotions are made.
   */
  next(leader: LeaderView, converging: boolean): MembershipAction | null {
    const voters = leader.conf.voters;
    const learners = leader.conf.learners ?? [];
    const members = [...voters, ...learners];
    const lostMember = members.find((id) => this.lost.has(id));
    if (lostMember !== undefined) return this.removal(leader.conf, lostMember);
    const joining = this.joining.find((id) => !members.includes(id));
    if (joining !== undefined) return propose({ type: "add-learner", node: joining });
    if (this.owed > 0 && members.length < MAX_MEMBERS) return { kind: "join" };
    const caughtUp = learners.find(
      (id) =>
        this.applied(id) !== null &&
        (leader.progress[id]?.match ?? 0) + this.profile.catchUpSlack >= leader.commit,
    );
    if (
      caughtUp !== undefined &&
      voters.length < MAX_VOTERS &&
      this.keepsQuorum(leader.conf, [...voters, caughtUp])
    ) {
      return propose({ type: "promote", node: caughtUp });
    }
    if (converging || !this.random.chance(this.profile.changeRate)) return null;
    const followers = voters.filter((id) => id !== leader.id);
    // Below three voters no voter can be removed (see keepsQuorum), so the weights do not ask.
    const weights = [
      members.length < MAX_VOTERS ? MAX_VOTERS - members.length : 0,
      Math.max(0, followers.length - 1),
      followers.length > 1 ? this.profile.removeLeader : 0,
      learners.length > 0 ? this.profile.removeLearner : 0,
    ];
    switch (this.weighted(weights)) {
      case 0:
        return { kind: "join" };
      case 1:
        return this.removal(leader.conf, this.pick(followers));
      case 2:
        return this.removal(leader.conf, leader.id);
      case 3:
        return propose({ type: "remove", node: this.pick(learners) });
      default:
        return null;
    }
  }

  /**
   * Whether the operator has nothing left to repair in `conf`: no lost member, every fresh node added,
   * and no learner left that could be promoted.
   */
  settled(conf: ConfState): boolean {
    const learners = conf.learners ?? [];
    const members = [...conf.voters, ...learners];
    if (members.some((id) => this.lost.has(id))) return false;
    if (this.owed > 0 || this.joining.some((id) => !members.includes(id))) return false;
    return learners.length === 0 || conf.voters.length >= MAX_VOTERS;
  }

  private removal(conf: ConfState, id: NodeId): MembershipAction | null {
    const rest = conf.voters.filter((v) => v !== id);
    if (rest.length < conf.voters.length && !this.keepsQuorum(conf, rest)) return null;
    return propose({ type: "remove", node: id });
  }

  /** Whether a change from `conf` to voters `to` leaves a quorum of both (see the class comment). */
  private keepsQuorum(conf: ConfState, to: readonly NodeId[]): boolean {
    return bothKeepQuorum(conf.voters, to, this.current(conf));
  }

  /**
   * The nodes sure to vote under `conf`: up, with its voters in the configuration they applied. One
   * that is down may come back having lost some of what it applied (see StateMachineStore).
   */
  private current(conf: ConfState): (id: NodeId) => boolean {
    return (id) => {
      const applied = this.lost.has(id) ? null : this.applied(id);
      return applied !== null && sameVoters(applied, conf);
    };
  }

  private pick<T>(items: readonly T[]): T {
    return items[this.random.nextInt(items.length)]!;
  }

  /** An index drawn by weight, or -1 when every weight is zero. */
  private weighted(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) total += w;
    if (total === 0) return -1;
    let x = this.random.nextFloat() * total;
    for (let i = 0; i < weights.length; i++) {
      x -= weights[i]!;
      if (x < 0) return i;
    }
    return weights.length - 1;
  }
}

/** Whether applying `entry` removes `id`: the node then shuts down, as an etcd member does. */
export function isRemovalOf(entry: Entry, id: NodeId): boolean {
  if (entry.type !== "conf") return false;
  const change = decodeConfChange(entry.data);
  return change.type === "remove" && change.node === id;
}

export function describeChange(change: ConfChange): string {
  return `${change.type} ${change.node}`;
}

function sameVoters(a: ConfState, b: ConfState): boolean {
  return a.voters.length === b.voters.length && a.voters.every((id) => b.voters.includes(id));
}

function isMember(conf: ConfState, id: NodeId): boolean {
  return conf.voters.includes(id) || (conf.learners ?? []).includes(id);
}

function quorum(voters: number): number {
  return Math.floor(voters / 2) + 1;
}

/** Whether the voters of both `from` and `to` that `counts` make a quorum of each. */
function bothKeepQuorum(
  from: readonly NodeId[],
  to: readonly NodeId[],
  counts: (id: NodeId) => boolean,
): boolean {
  if (to.length === 0) return false;
  const common = from.filter((id) => to.includes(id) && counts(id)).length;
  return common >= quorum(from.length) && common >= quorum(to.length);
}

function propose(change: ConfChange): MembershipAction {
  return { kind: "propose", change };
}
