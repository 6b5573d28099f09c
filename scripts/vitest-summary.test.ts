import { describe, expect, it } from "vitest";
import { failedWithoutTests, failureNames, summaryOf } from "./vitest-summary.mjs";

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

describe("the names of a vitest run's failures", () => {
  it("names each failed test under its file, and each file that failed outside its tests", () => {
    expect(
      failureNames(
        {
          testResults: [
            {
              name: "/repo/node/src/a.test.ts",
              status: "failed",
              assertionResults: [
                { status: "passed", fullName: "a passes" },
                { status: "failed", fullName: "a group fails once" },
                { status: "failed", fullName: "a group fails twice" },
              ],
            },
            {
              name: "/repo/tests-rf3/src/b.test.ts",
              status: "failed",
              assertionResults: [{ status: "skipped" }],
            },
            { name: "/repo/c.test.ts", status: "passed", assertionResults: [{ status: "passed" }] },
          ],
        },
        "/repo",
      ),
    ).toEqual([
      "node/src/a.test.ts > a group fails once",
      "node/src/a.test.ts > a group fails twice",
      "tests-rf3/src/b.test.ts (outside its tests)",
    ]);
    expect(failureNames({}, "/repo")).toEqual([]);
  });
});

describe("what a vitest run comes to", () => {
  const report = (total: number, passed: number, failed: number) => ({
    numTotalTests: total,
    numPassedTests: passed,
    numFailedTests: failed,
    testResults: [],
  });

  it("passes a run that passed every test, and counts a failed one", () => {
    expect(summaryOf(report(3, 3, 0), 0, "/repo")).toEqual({ status: 0, passed: 3, failed: 0, failures: [] });
    expect(summaryOf(report(3, 2, 1), 1, "/repo")).toMatchObject({ status: 1, passed: 2, failed: 1 });
  });

  it("fails a run that ran no test, naming it, whatever vitest's status", () => {
    for (const exit of [0, 1]) {
      expect(summaryOf(report(0, 0, 0), exit, "/repo")).toEqual({
        status: 1,
        passed: 0,
        failed: 1,
        failures: [`vitest ran no test (exit ${exit})`],
      });
    }
  });

  it("never reads 0 failed under a failing status", () => {
    expect(summaryOf(report(3, 3, 0), 2, "/repo")).toEqual({
      status: 2,
      passed: 3,
      failed: 1,
      failures: ["vitest exited 2"],
    });
  });
});
