import { SeededRandom } from "../../raft/seeded-random.js";
import type { Entry, HardState } from "../../raft/types.js";
import type { LogWrite } from "../durable-log-writer.js";
import { dataFor } from "./storage-fixture.js";

/** Where a log stands: enough to continue a workload from it. */
export interface LogPosition {
  readonly lastIndex: number;
  readonly hardState: HardState;
}

/**
 * An endless, deterministic sequence of writes as a follower would persist them from one seed:
 * appends of 1 to 32 entries of up to 2 KiB with commit advancing, and now and then a new leader's
 * term replacing an uncommitted suffix. The crash child writes it; the parent regenerates it to know
 * what each acknowledged write must have left.
 */
export function* crashWorkload(seed: number, from: LogPosition): Generator<LogWrite, never> {
  const rng = new SeededRandom(seed);
  let last = from.lastIndex;
  let hs = from.hardState;
  for (;;) {
    const entries: Entry[] = [];
    if (last > hs.commit && rng.chance(0.1)) {
      const term = hs.term + 1;
      const start = hs.commit + 1 + rng.nextInt(last - hs.commit);
      const count = 1 + rng.nextInt(8);
      for (let i = start; i < start + count; i++) entries.push(entryAt(i, term, rng));
      last = start + count - 1;
      hs = { term, vote: rng.chance(0.5) ? "n2" : null, commit: hs.commit };
    } else {
      const term = Math.max(hs.term, 1);
      const count = 1 + rng.nextInt(32);
      for (let i = last + 1; i <= last + count; i++) entries.push(entryAt(i, term, rng));
      last += count;
      const vote = term === hs.term ? hs.vote : "n1";
      hs = { term, vote, commit: hs.commit + rng.nextInt(last - hs.commit + 1) };
    }
    yield { snapshot: null, entries, hardState: hs };
  }
}

function entryAt(index: number, term: number, rng: SeededRandom): Entry {
  return { index, term, type: "normal", data: dataFor(index, term, rng.nextInt(2048)) };
}
