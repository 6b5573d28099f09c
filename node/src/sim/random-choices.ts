import type { SeededRandom } from "../raft/index.js";
import type { Range } from "./fault-profile.js";

/**
 * The choices the simulator makes from its run's stream. Each takes a fixed number of draws, so a
 * run that makes the same choices in the same order replays exactly.
 */

/** One of `items`, uniformly; one draw. */
export function pick<T>(random: SeededRandom, items: readonly T[]): T {
  return items[random.nextInt(items.length)]!;
}

/** A whole number in the inclusive range; one draw. */
export function between(random: SeededRandom, range: Range): number {
  return range[0] + random.nextInt(range[1] - range[0] + 1);
}

/** The index of one weight, chosen with probability weight / sum; one draw. */
export function weighted(random: SeededRandom, weights: readonly number[]): number {
  let total = 0;
  for (const w of weights) total += w;
  let x = random.nextFloat() * total;
  for (let i = 0; i < weights.length; i++) {
    x -= weights[i]!;
    if (x < 0) return i;
  }
  return weights.length - 1;
}
