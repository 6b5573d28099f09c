import { describe, expect, it } from "vitest";
import { failedWithoutTests } from "./vitest-summary.mjs";

describe("the summary of a vitest run", () => {
  it("counts a file that failed outside its tests, whose tests count as neither passed nor failed", () => {
    expect(
      failedWithoutTests({
        testResults: [
          // beforeAll threw (a port taken): its tests never ran.
          { status: "failed", assertionResults: [{ status: "skipped" }] },
          // Its own import threw: no tests at all.
          { status: "failed" },
          // A test failed: counted already as a failed test.
          { status: "failed", assertionResults: [{ status: "failed" }, { status: "passed" }] },
          { status: "passed", assertionResults: [{ status: "passed" }] },
        ],
      }),
    ).toBe(2);
    expect(failedWithoutTests({})).toBe(0);
  });
});
