import { describe, expect, it } from "vitest";
import { describeLimitDifferences } from "./peer-handshake.js";

describe("describeLimitDifferences", () => {
  const own = new Map([
    ["maxLeaseBatch", 256],
    ["maxMutationBytes", 8388608],
  ]);

  it("is null when the limits are identical, whatever their order", () => {
    const same = new Map([
      ["maxMutationBytes", 8388608],
      ["maxLeaseBatch", 256],
    ]);
    expect(describeLimitDifferences("voter1", own, "voter2", same)).toBeNull();
  });

  it("names every differing or missing limit with both values", () => {
    const theirs = new Map([
      ["maxLeaseBatch", 256],
      ["maxMutationBytes", 1024],
      ["maxOutboxMessages", 64],
    ]);
    expect(describeLimitDifferences("voter1", own, "voter2", theirs)).toBe(
      "canonical limits differ between voter1 and voter2: maxMutationBytes is 8388608 on voter1 but 1024 on " +
        "voter2; maxOutboxMessages is not set on voter1 but 64 on voter2",
    );
  });
});
