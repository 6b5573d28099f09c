import { describe, expect, it } from "vitest";
import { metricsReading } from "./dashboard-admission-reading.js";

const GAUGES = [
  'keyload_command_admission_commands{lane="data"} 5',
  'keyload_command_admission_commands{lane="control"} 1',
  'keyload_command_admission_retained_bytes{lane="data"} 40960',
  'keyload_command_admission_retained_bytes{lane="control"} 4096',
  'keyload_command_admission_queued{lane="data"} 2',
  'keyload_http_admission_requests{pool="data"} 8',
  'keyload_http_admission_requests{pool="control"} 0',
  'keyload_http_admission_modeled_bytes{pool="data"} 67141632',
  'keyload_http_admission_modeled_bytes{pool="control"} 0',
];

describe("metricsReading", () => {
  it("reads each lane's and pool's usage, and keys each refusal counter by governor, lane or pool, and reason", () => {
    const metrics = [
      "# TYPE keyload_http_admission_rejections_total counter",
      'keyload_http_admission_rejections_total{pool="data",reason="HttpRequests"} 12',
      'keyload_http_admission_rejections_total{pool="control",reason="HttpRequests"} 0',
      'keyload_command_admission_rejections_total{lane="data",reason="CommandCount"} 3',
      'keyload_command_admission_rejections_total{lane="control",reason="ControlPayloadTooLarge"} 1',
      ...GAUGES,
    ].join("\n");
    expect(metricsReading(metrics)).toEqual({
      usage: {
        dataCommands: 5,
        dataRetainedBytes: 40_960,
        controlCommands: 1,
        controlRetainedBytes: 4096,
        dataRequests: 8,
        dataModeledBytes: 67_141_632,
        controlRequests: 0,
        controlModeledBytes: 0,
      },
      refusals: {
        "http/data/HttpRequests": 12,
        "http/control/HttpRequests": 0,
        "command/data/CommandCount": 3,
        "command/control/ControlPayloadTooLarge": 1,
      },
    });
  });

  it("has no usage when a gauge is missing", () => {
    expect(metricsReading(GAUGES.slice(1).join("\n"))).toEqual({ usage: null, refusals: {} });
  });
});
