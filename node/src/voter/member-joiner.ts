import type { Logger } from "pino";
import { memberName } from "../peer/member-name.js";
import { PeerRemoteError } from "../peer/peer-errors.js";
import type { PeerTransport } from "../peer/peer-transport.js";
import type { JoinerHolds } from "./cluster-membership.js";
import { type DriverTimers, NODE_TIMERS, type TimerHandle } from "./driver-timers.js";
import { decodeJoinAnswer, encodeJoinRequest, JOIN_CHANNEL, type JoinedRole } from "./member-join.js";
import type { RaftDriver } from "./raft-driver.js";

export interface MemberJoinerOptions {
  readonly driver: Pick<RaftDriver, "status" | "members">;
  readonly transport: Pick<PeerTransport, "request" | "peerInfo">;
  /** The other voters' names. */
  readonly peers: readonly string[];
  readonly logger: Logger;
  /** How often a member that is not a voter yet asks. */
  readonly intervalMs: number;
  /** How long one request may take: the leader may make two configuration changes for it. */
  readonly requestTimeoutMs: number;
  readonly timers?: DriverTimers;
}

/**
 * Brings a voter that lost its storage back into the cluster, as Consul's autopilot does for a server:
 * while this member holds no configuration (a new member, never added) or is a learner in the one it
 * holds, it asks the leader, every interval, to take the next step (member-join.ts): add it as a learner
 * in place of the member of its name that no longer answers, then promote it once caught up. It asks
 * nothing once it is a voter, nor when the configuration it holds leaves it out (removed, or not yet
 * at the entry that added it, which it reaches as a learner), and stops for good when the leader says
 * it was removed.
 */
export class MemberJoiner {
  private readonly timers: DriverTimers;
  private timer: TimerHandle | undefined;
  private inFlight = false;
  private stopped = false;
  /** The role the leader last answered, and the last refusal logged, so that repeats log at debug. */
  private role: JoinedRole | null = null;
  private lastRefusal: string | null = null;

  constructor(private readonly options: MemberJoinerOptions) {
    this.timers = options.timers ?? NODE_TIMERS;
  }

  start(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = this.timers.setInterval(() => this.check(), this.options.intervalMs);
  }

  /** Stops asking; a request under way ends on its own timeout or with the transport. */
  stop(): void {
    this.stopped = true;
    this.timers.clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * What this member's configuration holds of it, when it should ask to join: none held (a new member)
   * or a learner in it; null when it should not ask (a voter, or left out of what it holds).
   */
  holds(): JoinerHolds | null {
    const members = this.options.driver.members();
    if (members.length === 0) return "none";
    const { id } = this.options.driver.status();
    return members.find((m) => m.id === id)?.role === "learner" ? "learner" : null;
  }

  private check(): void {
    if (this.inFlight || this.stopped) return;
    const holds = this.holds();
    if (holds === null) return;
    this.inFlight = true;
    this.ask(holds)
      .catch((err: unknown) => this.options.logger.error({ err }, "asking to join failed"))
      .finally(() => {
        this.inFlight = false;
      });
  }

  /**
   * Asks the leader a learner follows; a member not yet added knows none, so it asks every connected
   * peer and the leader among them acts (a follower refuses, Unavailable).
   */
  private async ask(holds: JoinerHolds): Promise<void> {
    const { driver, transport, peers, requestTimeoutMs } = this.options;
    const { id, leader } = driver.status();
    const leaderName = leader === null ? null : memberName(leader);
    const targets =
      leaderName !== null && peers.includes(leaderName)
        ? [leaderName]
        : peers.filter((peer) => transport.peerInfo(peer)?.connected === true);
    const body = encodeJoinRequest(id, holds);
    const answers = await Promise.allSettled(
      targets.map((peer) => transport.request(peer, JOIN_CHANNEL, body, { timeoutMs: requestTimeoutMs })),
    );
    if (this.stopped) return;
    for (const [i, answer] of answers.entries()) {
      if (answer.status === "fulfilled") this.answered(targets[i]!, decodeJoinAnswer(answer.value));
      else this.refused(targets[i]!, answer.reason);
    }
  }

  private answered(peer: string, role: JoinedRole | null): void {
    const { logger } = this.options;
    if (role === null) {
      logger.warn({ peerId: peer }, "the leader's answer to a join request is not a role");
      return;
    }
    this.lastRefusal = null;
    if (role === "removed") {
      // The configuration it holds names it a learner, a later one does not: it asks nothing more.
      logger.warn({ leader: peer }, "this member was removed from the cluster: not asking to join again");
      this.stop();
      return;
    }
    if (role === this.role) return;
    this.role = role;
    logger.info(
      { leader: peer, role },
      role === "voter" ? "this new member is a voter" : "this new member was added as a learner",
    );
  }

  /**
   * A follower's refusal is expected, and a leader's (a learner behind, a quorum not kept) repeats:
   * each is logged once in a row, told apart by its message without the figures it carries (how far
   * a learner is), as only the code and the message cross the peer network.
   */
  private refused(peer: string, err: unknown): void {
    const { logger } = this.options;
    const follower = err instanceof PeerRemoteError && err.remoteCode === "Unavailable";
    const what = err instanceof Error ? `${err.name}: ${err.message.replace(/\d+/g, "#")}` : String(err);
    if (follower || what === this.lastRefusal) {
      logger.debug({ peerId: peer, err }, "join request refused");
      return;
    }
    this.lastRefusal = what;
    logger.info({ peerId: peer, err }, "join request refused; asking again");
  }
}
