import { parseVoterName, VOTER_NAMES } from "./app-model.js";
import { UsageError } from "./apphost-errors.js";
import type { VoterTarget } from "./cluster-leader.js";

/** A voter on the command line: `voterN`, or `leader` for the voter leading when the command runs. */
export function parseVoterTarget(text: string): VoterTarget {
  return text === "leader" ? "leader" : parseVoterName(text);
}

/** `partition voter1,voter2 voter3`: each argument one group of voters, comma-separated. */
export function parseGroups(args: readonly string[]): VoterTarget[][] {
  if (args.length === 0)
    throw new UsageError("partition needs the groups to cut apart, e.g. partition voter1,voter2 voter3");
  const seen = new Set<string>();
  const groups = args.map((arg) =>
    arg.split(",").map((text) => {
      const target = parseVoterTarget(text);
      if (seen.has(target)) throw new UsageError(`${target} is named in more than one group`);
      seen.add(target);
      return target;
    }),
  );
  if (!seen.has("leader")) checkCutsApart(groups);
  return groups;
}

/**
 * Groups (of voter names, `leader` resolved) that leave every voter with every other cut nothing: asked
 * for by mistake, like an empty partition. A voter named in no group is cut off alone.
 */
export function checkCutsApart(groups: readonly (readonly string[])[]): void {
  const named = new Set(groups.flat());
  const alone = VOTER_NAMES.filter((name) => !named.has(name));
  if (groups.length + alone.length < 2) {
    const asked = groups.map((g) => g.join(",")).join(" ");
    throw new UsageError(`partition ${asked} cuts no voter off from another`);
  }
}
