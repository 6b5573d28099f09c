import { it } from "vitest";
import { SOAK_PARTS, SOAK_SEEDS, soakPart } from "./test-fixtures/soak.js";

// The CI seed range is split over several files so vitest's workers run the parts in parallel.
it(`soak part 1 of ${SOAK_PARTS} (${SOAK_SEEDS} seeds in all) keeps every invariant and converges`, () => {
  soakPart(0);
});
