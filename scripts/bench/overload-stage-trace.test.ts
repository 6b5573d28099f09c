import { describe, expect, it } from "vitest";
import { parseStageHistogram, stagesBetween } from "./overload-stage-trace.js";

/** One lane/stage series as prom-client writes it: cumulative buckets, sum and count. */
function series(stage: string, buckets: Record<string, number>, sum: number): string {
  const lines = Object.entries(buckets).map(
    ([le, n]) => `keyload_command_stage_seconds_bucket{le="${le}",lane="control",stage="${stage}"} ${n}`,
  );
  const count = buckets["+Inf"] ?? 0;
  return [
    ...lines,
    `keyload_command_stage_seconds_sum{lane="control",stage="${stage}"} ${sum}`,
    `keyload_command_stage_seconds_count{lane="control",stage="${stage}"} ${count}`,
  ].join("\n");
}

describe("the overload bench's stage trace", () => {
  it("gives each stage's count, mean and p99 bucket between two scrapes", () => {
    const before = parseStageHistogram(series("queue", { "0.01": 10, "0.1": 10, "1": 10, "+Inf": 10 }, 0.05));
    // 100 more: 90 under 10 ms, 9 under 100 ms, 1 under 1 s.
    const after = parseStageHistogram(
      [
        "# HELP keyload_command_stage_seconds ...",
        series("queue", { "0.01": 100, "0.1": 109, "1": 110, "+Inf": 110 }, 2.05),
        'keyload_http_request_duration_seconds_bucket{le="0.1"} 7',
      ].join("\n"),
    );
    const figures = stagesBetween(before, after, "control");
    const queue = figures.find((f) => f.stage === "queue");
    expect(queue).toMatchObject({ stage: "queue", count: 100, p99Ms: 100 });
    expect(queue?.meanMs).toBeCloseTo(20, 9);
    // A stage with no observations has none to report.
    expect(figures.find((f) => f.stage === "apply")).toMatchObject({ count: 0 });
  });
});
