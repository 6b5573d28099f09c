import { InvalidArgumentError } from "@keyload/contract";
import type { Logger } from "pino";
import { memberName } from "../peer/member-name.js";
import type { RequestHandler } from "../peer/peer-transport.js";
import type { ClusterMembership } from "./cluster-membership.js";

/**
 * The peer channel on which a new member asks the leader to join the configuration (MemberJoiner): the
 * request is its member ID, the answer the role it holds after the leader's step (ClusterMembership.
 * join), both as UTF-8 text.
 */
export const JOIN_CHANNEL = "join";

export type JoinedRole = "learner" | "voter";

const utf8 = new TextDecoder("utf-8", { fatal: true });

export function encodeJoinRequest(memberId: string): Uint8Array {
  return Buffer.from(memberId, "utf8");
}

export function decodeJoinAnswer(body: Uint8Array): JoinedRole | null {
  const text = Buffer.from(body).toString("utf8");
  return text === "learner" || text === "voter" ? text : null;
}

/**
 * Serves join requests, on the leader (a follower refuses with Unavailable, as ClusterMembership does).
 * A peer joins only under its own name: the one its handshake proved.
 */
export function joinHandler(membership: Pick<ClusterMembership, "join">, logger: Logger): RequestHandler {
  return async (fromPeerId, body) => {
    let memberId: string;
    try {
      memberId = utf8.decode(body);
    } catch {
      throw new InvalidArgumentError(`${fromPeerId} sent a join request that is not UTF-8`, {
        reason: "InvalidJoinRequest",
      });
    }
    if (memberName(memberId) !== fromPeerId) {
      throw new InvalidArgumentError(`${fromPeerId} asked to join as ${memberId}, a member of another name`, {
        reason: "InvalidJoinRequest",
      });
    }
    const { role, changes } = await membership.join(memberId);
    if (changes.length > 0)
      logger.info({ memberId, role, changes }, "new member joining: configuration changed");
    return Buffer.from(role, "utf8");
  };
}
