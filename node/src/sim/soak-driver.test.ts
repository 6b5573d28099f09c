import { describe, expect, it } from "vitest";
import { runDriverSeed } from "./driver/driver-simulator.js";

/** The CI soak of the driver simulator (`pnpm sim --profile driver` soaks fresh seeds). */
const DRIVER_SOAK_SEEDS = 1500;

describe("the production driver under the driver simulator's faults", () => {
  it(`keeps every invariant over seeds 0 to ${DRIVER_SOAK_SEEDS - 1}`, async () => {
    const failures: string[] = [];
    for (let seed = 0; seed < DRIVER_SOAK_SEEDS; seed++) {
      const result = await runDriverSeed(seed);
      if (result.violation !== undefined) {
        failures.push(
          failures.length === 0 ? result.violation.message : result.violation.message.split("\n")[0]!,
        );
      }
    }
    expect(failures.join("\n\n")).toBe("");
  });
});
