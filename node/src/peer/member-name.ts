/**
 * A Raft member ID names the voter process that holds it: the voter's configured name, or, for a voter
 * that lost its data and came back as a new member, `name~incarnation` (a configured name never holds
 * `~`). The peer network reaches voters by name, so a message meant for an earlier incarnation reaches
 * the new one, whose core drops it: the new member never answers for what the old one promised.
 */
const SEPARATOR = "~";

export function memberName(memberId: string): string {
  const at = memberId.indexOf(SEPARATOR);
  return at < 0 ? memberId : memberId.slice(0, at);
}

/** The member ID of a new incarnation of the voter `name`; `token` makes it one no member had before. */
export function incarnationOf(name: string, token: string): string {
  return `${name}${SEPARATOR}${token}`;
}

/** A member ID as `memberName` and `incarnationOf` make them: a configured name, maybe `~` and 8 hex. */
const MEMBER_ID = /^[A-Za-z0-9._-]{1,64}(~[0-9a-f]{8})?$/;

export function isMemberId(value: string): boolean {
  return MEMBER_ID.test(value);
}
