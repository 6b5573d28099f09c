import { Counter, collectDefaultMetrics, Gauge, type Registry } from "prom-client";
import type { CommandAdmissionGovernor } from "../admission/command-admission-governor.js";
import type { DiskFloor } from "../admission/disk-floor.js";
import type { PeerStats } from "../peer/peer-stats.js";
import type { PeerTransport } from "../peer/peer-transport.js";
import type { StateMachine } from "../state/state-machine.js";
import type { RaftDriver } from "./raft-driver.js";

export interface VoterMetricSources {
  readonly driver: RaftDriver;
  readonly stateMachine: StateMachine;
  readonly commandGovernor: CommandAdmissionGovernor;
  readonly diskFloor: DiskFloor;
  readonly transport: PeerTransport;
}

/** The peer transport's counters as exported, each with its help text. */
const PEER_COUNTERS: readonly (readonly [keyof PeerStats, string])[] = [
  ["framesSent", "Frames sent to peers"],
  ["bytesSent", "Bytes sent to peers"],
  ["framesReceived", "Frames received from peers"],
  ["bytesReceived", "Bytes received from peers"],
  ["sendDrops", "Peer messages not sent: no connection, a full write buffer, or unencodable"],
  ["receiveDrops", "Peer messages received but not delivered: spoofed sender, misrouted, or unhandled"],
  ["reconnects", "Dials to peers after a failed dial or a lost connection"],
  ["authFailures", "Peer handshakes refused, by either side (wrong secret, unknown voter, differing limits)"],
  ["protocolErrors", "Peer connections closed for bytes that are not valid frames or messages"],
  [
    "unauthenticFrames",
    "Peer records or frames that failed their authentication (forged, altered or replayed)",
  ],
  [
    "handshakesOverCap",
    "Peer connections closed at once: too many handshakes open, from one source or in all",
  ],
];

/** Counts command admission refusals; the service increments it, `/metrics` shows it. */
export type CommandRejections = Counter<"lane" | "reason">;

/**
 * The voter's own metrics beside the HTTP edge's: Raft position, command admission usage and the peer
 * transport's counters, and the process's (event-loop delay, CPU, memory, GC, as every Node service
 * exports them), which say whether a voter keeps up under load. Gauges are read when scraped, so
 * nothing is updated on the hot path.
 */
export function registerVoterMetrics(registry: Registry, sources: VoterMetricSources): CommandRejections {
  const { driver, stateMachine, commandGovernor, diskFloor, transport } = sources;
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: "keyload_raft_term",
    help: "Current Raft term",
    registers: [registry],
    collect() {
      this.set(driver.status().term);
    },
  });
  new Gauge({
    name: "keyload_raft_commit_index",
    help: "Highest log index known to be committed",
    registers: [registry],
    collect() {
      this.set(driver.status().commit);
    },
  });
  new Gauge({
    name: "keyload_raft_applied_index",
    help: "Highest log index applied to the state machine",
    registers: [registry],
    collect() {
      this.set(stateMachine.applied().index);
    },
  });
  new Gauge({
    name: "keyload_raft_is_leader",
    help: "1 when this voter is the leader",
    registers: [registry],
    collect() {
      this.set(driver.isLeader() ? 1 : 0);
    },
  });
  const usage = (field: "commands" | "retainedBytes" | "queued" | "active") =>
    new Gauge({
      name: `keyload_command_admission_${field === "retainedBytes" ? "retained_bytes" : field}`,
      help: `Command admission usage: ${field}, per lane`,
      labelNames: ["lane"],
      registers: [registry],
      collect() {
        for (const lane of ["data", "control"] as const)
          this.set({ lane }, commandGovernor.usage(lane)[field]);
      },
    });
  usage("commands");
  usage("retainedBytes");
  usage("queued");
  usage("active");
  new Gauge({
    name: "keyload_disk_free_bytes",
    help: "Bytes free on the data directory's filesystem, as last measured (absent before the first)",
    registers: [registry],
    collect() {
      const { freeBytes } = diskFloor.status();
      if (freeBytes === null) this.reset();
      else this.set(freeBytes);
    },
  });
  new Gauge({
    name: "keyload_disk_floor_bytes",
    help: "Free bytes below which command admission refuses data commands (soft) or every write (hard)",
    labelNames: ["floor"],
    registers: [registry],
    collect() {
      const status = diskFloor.status();
      this.set({ floor: "soft" }, status.softFloorBytes);
      this.set({ floor: "hard" }, status.hardFloorBytes);
    },
  });
  for (const [field, help] of PEER_COUNTERS) {
    new Counter({
      name: `keyload_peer_${field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}_total`,
      help,
      registers: [registry],
      collect() {
        // The transport keeps the running totals; a scrape copies them.
        this.reset();
        this.inc(transport.stats()[field]);
      },
    });
  }
  return new Counter({
    name: "keyload_command_admission_rejections_total",
    help: "Commands refused by command admission, by lane and reason",
    labelNames: ["lane", "reason"],
    registers: [registry],
  });
}
