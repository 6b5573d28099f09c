import { it } from "vitest";
import { POWER_LOSS_PARTS, POWER_LOSS_SEEDS, powerLossPart } from "./test-fixtures/soak.js";

// Split over several files so vitest's workers run the parts in parallel.
it(`power-loss soak part 1 of ${POWER_LOSS_PARTS} (${POWER_LOSS_SEEDS} seeds in all) keeps every invariant and converges`, () => {
  powerLossPart(0);
});
