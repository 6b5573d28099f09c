import { describe, expect, it } from "vitest";
import {
  DRIVER_FIGURE_EIGHT_PROFILE,
  DRIVER_PROFILE,
  DRIVER_REJOIN_PROFILE,
  type DriverProfile,
} from "./driver/driver-profiles.js";
import { runDriverSeed } from "./driver/driver-simulator.js";

/** The CI soaks of the driver simulator (`pnpm sim --profile driver|driver-figure-eight|driver-rejoin` soaks fresh seeds). */
const SOAKS: readonly [DriverProfile, number][] = [
  [DRIVER_PROFILE, 1500],
  [DRIVER_FIGURE_EIGHT_PROFILE, 300],
  [DRIVER_REJOIN_PROFILE, 300],
];

describe("the production driver under the driver simulator's faults", () => {
  for (const [profile, seeds] of SOAKS) {
    it(`keeps every invariant over seeds 0 to ${seeds - 1} of the ${profile.name} profile`, async () => {
      const failures: string[] = [];
      let rejoins = 0;
      for (let seed = 0; seed < seeds; seed++) {
        const result = await runDriverSeed(seed, { profile });
        rejoins += result.stats.rejoins;
        if (result.violation !== undefined) {
          failures.push(
            failures.length === 0 ? result.violation.message : result.violation.message.split("\n")[0]!,
          );
        }
      }
      expect(failures.join("\n\n")).toBe("");
      // Lost disks are replaced in every profile: by the operator, or, in driver-rejoin, by the new
      // incarnations' own join requests.
      expect(rejoins).toBeGreaterThan(seeds / 10);
    });
  }
});
