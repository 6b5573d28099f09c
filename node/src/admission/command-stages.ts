import type { Lane } from "@keyload/contract";
import { Histogram, type Registry } from "prom-client";

/**
 * Where a command's time goes on the voter that received it, in order:
 * - `edge`: from the request's first hook (HTTP admission, key, body read and parse) to its submission;
 * - `queue`: waiting in its lane for the command scheduler to take it into a unit;
 * - `replicate`: its unit proposed until committed (on a follower: forwarded until the leader answered);
 * - `apply`: committed until its outcome was known;
 * - `respond`: the outcome known until the response was written.
 */
export const COMMAND_STAGES = ["edge", "queue", "replicate", "apply", "respond"] as const;
export type CommandStage = (typeof COMMAND_STAGES)[number];

/** Told how long each command spent in each stage. */
export interface CommandStageObserver {
  observe(lane: Lane, stage: CommandStage, ms: number): void;
}

export const NO_STAGE_OBSERVER: CommandStageObserver = { observe: () => undefined };

/** The stages as a Prometheus histogram, `keyload_command_stage_seconds{lane, stage}`. */
export class CommandStageMetrics implements CommandStageObserver {
  /** One child per label pair, resolved once: `observe` runs several times per command. */
  private readonly children: Record<Lane, Record<CommandStage, Histogram.Internal<"lane" | "stage">>>;

  constructor(registry: Registry) {
    const histogram = new Histogram({
      name: "keyload_command_stage_seconds",
      help: "Time a command spent in each stage on the voter that received it (see the docs' overload section)",
      labelNames: ["lane", "stage"],
      buckets: [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
      ],
      registers: [registry],
    });
    const lane = (name: Lane) =>
      Object.fromEntries(
        COMMAND_STAGES.map((stage) => {
          // Exported from zero, so a dashboard sees every series before its first observation.
          histogram.zero({ lane: name, stage });
          return [stage, histogram.labels({ lane: name, stage })];
        }),
      ) as Record<CommandStage, Histogram.Internal<"lane" | "stage">>;
    this.children = { data: lane("data"), control: lane("control") };
  }

  observe(lane: Lane, stage: CommandStage, ms: number): void {
    this.children[lane][stage].observe(ms / 1000);
  }
}
