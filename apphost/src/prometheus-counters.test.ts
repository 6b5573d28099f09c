import { describe, expect, it } from "vitest";
import { readSamples } from "./prometheus-counters.js";

const EXPOSITION = `# HELP keyload_http_admission_rejections_total Requests HTTP admission refused, by pool and reason
# TYPE keyload_http_admission_rejections_total counter
keyload_http_admission_rejections_total{pool="data",reason="HttpRequests"} 7
keyload_http_admission_rejections_total{pool="control",reason="BodyTooLarge"} 0
keyload_http_admission_requests{pool="data"} 3
keyload_command_admission_rejections_total{lane="data",reason="Odd \\"quoted\\", reason"} 2.5
keyload_command_admission_rejections_total 1e3
`;

describe("readSamples", () => {
  it("reads the named metrics' samples with their labels and skips comments and other metrics", () => {
    const names = new Set([
      "keyload_http_admission_rejections_total",
      "keyload_command_admission_rejections_total",
    ]);
    expect(readSamples(EXPOSITION, names)).toEqual([
      {
        name: "keyload_http_admission_rejections_total",
        labels: { pool: "data", reason: "HttpRequests" },
        value: 7,
      },
      {
        name: "keyload_http_admission_rejections_total",
        labels: { pool: "control", reason: "BodyTooLarge" },
        value: 0,
      },
      {
        name: "keyload_command_admission_rejections_total",
        labels: { lane: "data", reason: 'Odd "quoted", reason' },
        value: 2.5,
      },
      { name: "keyload_command_admission_rejections_total", labels: {}, value: 1000 },
    ]);
  });
});
