import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { CommandStageMetrics } from "./command-stages.js";

describe("CommandStageMetrics", () => {
  it("records each observation in its lane and stage, in seconds", async () => {
    const registry = new Registry();
    const stages = new CommandStageMetrics(registry);
    stages.observe("control", "queue", 4);
    stages.observe("data", "apply", 300);
    const text = await registry.metrics();
    expect(text).toContain('keyload_command_stage_seconds_bucket{le="0.005",lane="control",stage="queue"} 1');
    expect(text).toContain(
      'keyload_command_stage_seconds_bucket{le="0.0025",lane="control",stage="queue"} 0',
    );
    expect(text).toContain('keyload_command_stage_seconds_sum{lane="data",stage="apply"} 0.3');
    // Every series is there before its first observation, so a dashboard sees them all from the start.
    expect(text).toContain('keyload_command_stage_seconds_count{lane="data",stage="respond"} 0');
  });
});
