import type { TestCluster, TestVoter, VoterName } from "@keyload/apphost/testing";
import type { AdmissionStatus, KeyLoadClient } from "@keyload/client";
import { passReadBarrier } from "./read-barrier.js";
import { errorLine, waitUntil } from "./wait-until.js";

/**
 * A leader stopped with SIGSTOP, its connections open: a write sent to a follower is admitted there and
 * forwarded, and the forward waits in the paused leader's socket for an answer that does not come (up
 * to the replication deadline, which such tests set well past their length). The two followers elect a
 * new leader meanwhile, after which they answer quorum reads such as the admission status again.
 */
export class PausedLeader {
  private paused = true;

  private constructor(
    private readonly cluster: TestCluster,
    readonly leader: TestVoter,
    /** The voter the test sends its writes to, and the other follower. */
    readonly follower: TestVoter,
    readonly other: TestVoter,
  ) {}

  /**
   * Pauses the current leader; `through` (a follower, any by default) is the voter to write through.
   * Each follower first passes a read barrier, so it has applied everything committed before the
   * pause: API keys just created included, which it would not know while the leader sleeps.
   */
  static async pause(cluster: TestCluster, through?: VoterName): Promise<PausedLeader> {
    const leader = await cluster.waitForLeader();
    if (leader.name === through) throw new Error(`${through} leads: it cannot be written through`);
    const followers = cluster.voters.filter((v) => v.name !== leader.name);
    const follower = followers.find((v) => through === undefined || v.name === through)!;
    const other = followers.find((v) => v !== follower)!;
    await passReadBarrier(cluster, followers);
    cluster.pause(leader.name);
    return new PausedLeader(cluster, leader, follower, other);
  }

  /**
   * Waits until `follower` answers the admission status, a quorum read: once the two followers have a
   * leader of their own. Returns that first answer.
   */
  followerStatus(admin: KeyLoadClient): Promise<AdmissionStatus> {
    return waitUntil(
      "the follower to answer the admission status once the other two elected",
      async (seen) => {
        try {
          return await admin.admissionStatus({ endpoint: this.follower.httpUrl });
        } catch (error) {
          seen(errorLine(error));
          return undefined;
        }
      },
    );
  }

  /** Resumes the old leader, which then learns the new term and drops or answers what it was sent. */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.cluster.resume(this.leader.name);
  }
}
