import { InvalidArgumentError } from "@keyload/contract";
import type { Logger } from "pino";
import { memberName } from "../peer/member-name.js";
import type { PeerTransport, RequestHandler } from "../peer/peer-transport.js";
import type { ClusterMembership, JoinerHolds, MemberJoin } from "./cluster-membership.js";

/**
 * The peer channel on which a member that is not a voter yet asks the leader to take the next step of
 * its join (MemberJoiner, ClusterMembership.join). The request is its member ID and what its own
 * configuration holds of it (`none` or `learner`) on two lines; the answer the role it has after the
 * leader's step (`learner`, `voter`, or `removed`); both UTF-8 text.
 */
export const JOIN_CHANNEL = "join";

export type JoinedRole = MemberJoin["role"];

const utf8 = new TextDecoder("utf-8", { fatal: true });
const ROLES: readonly JoinedRole[] = ["learner", "voter", "removed"];
const HOLDS: readonly JoinerHolds[] = ["none", "learner"];

export function encodeJoinRequest(memberId: string, holds: JoinerHolds): Uint8Array {
  return Buffer.from(`${memberId}\n${holds}`, "utf8");
}

export function decodeJoinAnswer(body: Uint8Array): JoinedRole | null {
  const text = Buffer.from(body).toString("utf8");
  return ROLES.find((role) => role === text) ?? null;
}

/**
 * The member ID of the process `transport`'s own connection reaches at the configured address of the
 * voter `name`, or null while none is connected (ClusterMembershipOptions.memberAt).
 */
export function memberReachedAt(transport: Pick<PeerTransport, "peerInfo">): (name: string) => string | null {
  return (name) => {
    const info = transport.peerInfo(name);
    return info?.connected === true ? info.memberId : null;
  };
}

/**
 * Serves join requests, on the leader (a follower refuses with Unavailable, as ClusterMembership does).
 * A peer joins only under the name its handshake proved.
 */
export function joinHandler(membership: Pick<ClusterMembership, "join">, logger: Logger): RequestHandler {
  return async (fromPeerId, body) => {
    const { memberId, holds } = decodeJoinRequest(fromPeerId, body);
    if (memberName(memberId) !== fromPeerId) {
      throw new InvalidArgumentError(`${fromPeerId} asked to join as ${memberId}, a member of another name`, {
        reason: "InvalidJoinRequest",
      });
    }
    const { role, changes } = await membership.join(memberId, holds);
    if (changes.length > 0)
      logger.info({ memberId, role, changes }, "new member joining: configuration changed");
    if (role === "removed")
      logger.warn({ memberId }, "a removed member asked to join again: told it was removed");
    return Buffer.from(role, "utf8");
  };
}

function decodeJoinRequest(fromPeerId: string, body: Uint8Array): { memberId: string; holds: JoinerHolds } {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    text = "";
  }
  const [memberId, held, ...rest] = text.split("\n");
  const holds = HOLDS.find((h) => h === held);
  if (memberId === undefined || holds === undefined || rest.length > 0) {
    throw new InvalidArgumentError(
      `${fromPeerId} sent a join request that is not a member ID and what it holds`,
      {
        reason: "InvalidJoinRequest",
      },
    );
  }
  return { memberId, holds };
}
