/** Where a voter says the leader is: its voter ID and public base URL, each when known. */
export interface LeaderHint {
  readonly id: string | undefined;
  readonly url: string | undefined;
}

export const LEADER_HEADER = "keyload-leader";

/** `key="string"`: the only member shape the voter writes into its RFC 8941 dictionary. */
const MEMBER = /^\s*([a-z*][a-z0-9_.*-]*)\s*=\s*"((?:[^"\\]|\\["\\])*)"\s*$/;

/**
 * Reads the `KeyLoad-Leader` header (a structured-field dictionary such as
 * `id="voter2", url="http://127.0.0.1:7102"`). Members of other shapes, or other keys, are skipped
 * rather than refused: the hint only steers the next attempt, so a partial one is still useful.
 */
export function parseLeaderHint(value: string | undefined): LeaderHint | undefined {
  if (value === undefined) return undefined;
  let id: string | undefined;
  let url: string | undefined;
  for (const member of splitMembers(value)) {
    const match = MEMBER.exec(member);
    if (match === null) continue;
    const text = match[2]!.replace(/\\(["\\])/g, "$1");
    if (match[1] === "id") id = text;
    else if (match[1] === "url") url = text;
  }
  return id === undefined && url === undefined ? undefined : { id, url };
}

/** Splits on commas outside quoted strings (a URL or ID may itself hold a comma). */
function splitMembers(value: string): string[] {
  const members: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === "\\" && quoted) i++;
    else if (c === '"') quoted = !quoted;
    else if (c === "," && !quoted) {
      members.push(value.slice(start, i));
      start = i + 1;
    }
  }
  members.push(value.slice(start));
  return members;
}
