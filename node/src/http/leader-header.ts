import type { LeaderHint } from "./voter-service.js";

export const LEADER_HEADER = "KeyLoad-Leader";

export const LEADER_HEADER_DESCRIPTION =
  "Where the leader is, as far as this voter knows, on Unavailable and UnknownWriteOutcome answers: a " +
  'structured-field dictionary (RFC 8941) with the leader\'s voter ID and public URL, e.g. id="voter2", ' +
  'url="http://127.0.0.1:7102"; a member is left out when unknown, the header when both are.';

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** An RFC 8941 string, or undefined for text it cannot carry (non-ASCII), which is then left out. */
function structuredString(value: string): string | undefined {
  if (!PRINTABLE_ASCII.test(value)) return undefined;
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

export function leaderHeaderValue(hint: LeaderHint): string | undefined {
  const members: string[] = [];
  const id = hint.leaderId === null ? undefined : structuredString(hint.leaderId);
  const url = hint.leaderHttpUrl === null ? undefined : structuredString(hint.leaderHttpUrl);
  if (id !== undefined) members.push(`id=${id}`);
  if (url !== undefined) members.push(`url=${url}`);
  return members.length === 0 ? undefined : members.join(", ");
}
