import type { Lane, ResourceExhaustedReason } from "@keyload/contract";
import { Counter, collectDefaultMetrics, Gauge, Histogram, type Registry } from "prom-client";
import type { CommandAdmissionGovernor } from "../admission/command-admission-governor.js";
import type { DiskFloor } from "../admission/disk-floor.js";
import { packageVersion } from "../package-version.js";
import type { PeerStats } from "../peer/peer-stats.js";
import type { PeerTransport } from "../peer/peer-transport.js";
import type { StateMachine } from "../state/state-machine.js";
import type { DurableLogStore } from "../storage/durable-log-store.js";
import type { RaftDriver } from "./raft-driver.js";

/** Why command admission refuses, by lane: only the control lane caps a payload's size. */
const COMMAND_REFUSALS: Readonly<Record<Lane, readonly ResourceExhaustedReason[]>> = {
  data: ["CommandCount", "CommandBytes", "TenantCommands", "PrincipalCommands", "DiskFloor"],
  control: [
    "CommandCount",
    "CommandBytes",
    "TenantCommands",
    "PrincipalCommands",
    "ControlPayloadTooLarge",
    "DiskHardFloor",
  ],
};

export interface VoterMetricSources {
  readonly driver: RaftDriver;
  readonly stateMachine: StateMachine;
  readonly commandGovernor: CommandAdmissionGovernor;
  readonly diskFloor: DiskFloor;
  readonly transport: PeerTransport;
  /** The Raft log's storage, whose fsyncs are timed. */
  readonly store: DurableLogStore;
}

/**
 * The peer transport's counters per peer, each with its metric's name and help text. The `peer` label
 * is a voter's name, or empty for what no authenticated peer can be charged with (an accepted
 * connection until it authenticates, a handshake it refused); see PeerTransport.peerStats.
 */
const PEER_COUNTERS: readonly (readonly [keyof PeerStats, string, string])[] = [
  ["framesSent", "keyload_peer_sent_frames_total", "Frames sent to the peer"],
  ["bytesSent", "keyload_peer_sent_bytes_total", "Bytes sent to the peer, frame headers and seals included"],
  ["framesReceived", "keyload_peer_received_frames_total", "Frames received from the peer"],
  ["bytesReceived", "keyload_peer_received_bytes_total", "Bytes received from the peer"],
  [
    "sendDrops",
    "keyload_peer_send_drops_total",
    "Messages to the peer not sent: no connection, a full write buffer, or unencodable",
  ],
  [
    "receiveDrops",
    "keyload_peer_receive_drops_total",
    "Messages from the peer not delivered: spoofed sender, misrouted, or unhandled",
  ],
  [
    "reconnects",
    "keyload_peer_reconnects_total",
    "Dials to the peer after a failed dial or a lost connection",
  ],
  [
    "authFailures",
    "keyload_peer_auth_failures_total",
    "Peer handshakes refused, by either side (wrong secret, unknown voter, differing limits)",
  ],
  [
    "protocolErrors",
    "keyload_peer_protocol_errors_total",
    "Peer connections closed for bytes that are not valid frames or messages",
  ],
  [
    "unauthenticFrames",
    "keyload_peer_unauthentic_frames_total",
    "Peer records or frames that failed their authentication (forged, altered or replayed)",
  ],
];

/**
 * Seconds, for the log's fsyncs and the state machine's applies: from tens of microseconds (an fsync
 * on a fast disk, a small batch) to seconds (a disk in trouble).
 */
const LATENCY_BUCKETS = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
];

/** Counts command admission refusals; the service increments it, `/metrics` shows it. */
export type CommandRejections = Counter<"lane" | "reason">;

/**
 * The voter's own metrics beside the HTTP edge's: its build, Raft position and leader changes, the
 * log's fsync and the state machine's apply latencies, command admission usage, the peer transport's
 * counters per peer, and the process's (event-loop delay, CPU, memory, GC: prom-client's defaults, as
 * every Node service exports them), which say whether a voter keeps up under load. Gauges and counters
 * are read when scraped; only the two histograms are observed as they go, once per fsync and once
 * per applied batch.
 */
export function registerVoterMetrics(registry: Registry, sources: VoterMetricSources): CommandRejections {
  const { driver, stateMachine, commandGovernor, diskFloor, transport, store } = sources;
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: "keyload_build_info",
    help: "Always 1; its labels say which voter version runs, on which Node.js",
    labelNames: ["version", "node_version"],
    registers: [registry],
  }).set({ version: packageVersion(), node_version: process.version }, 1);
  const fsyncs = new Histogram({
    name: "keyload_log_fsync_duration_seconds",
    help: "Seconds each durable write of the Raft log spent in its fsyncs (group commit: one per group)",
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  store.onSynced((seconds) => fsyncs.observe(seconds));
  const applies = new Histogram({
    name: "keyload_apply_duration_seconds",
    help: "Seconds the state machine took to apply each batch of committed entries",
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  driver.onBatchApplied((seconds) => applies.observe(seconds));
  new Counter({
    name: "keyload_raft_leader_changes_total",
    help: "Times this voter saw the leader change since it started, its first leader included",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(driver.leaderChanges());
    },
  });
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
      // Removed, not reset: a label-less gauge resets to 0, which would read as a full disk.
      if (freeBytes === null) this.remove();
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
  for (const [field, name, help] of PEER_COUNTERS) {
    new Counter({
      name,
      help,
      labelNames: ["peer"],
      registers: [registry],
      collect() {
        // The transport keeps the running totals; a scrape copies them. What no peer is charged with
        // shows only once there is some.
        this.reset();
        for (const [peer, stats] of transport.peerStats()) {
          if (peer !== "" || stats[field] > 0) this.inc({ peer }, stats[field]);
        }
      },
    });
  }
  new Counter({
    name: "keyload_peer_handshakes_over_cap_total",
    help: "Peer connections closed at once: too many handshakes open, from one source or in all",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(transport.stats().handshakesOverCap);
    },
  });
  const rejections = new Counter({
    name: "keyload_command_admission_rejections_total",
    help: "Commands refused by command admission, by lane and reason",
    labelNames: ["lane", "reason"],
    registers: [registry],
  });
  // From zero, so that rate() and a dashboard see a lane's first refusals of a reason.
  for (const [lane, reasons] of Object.entries(COMMAND_REFUSALS)) {
    for (const reason of reasons) rejections.inc({ lane, reason }, 0);
  }
  return rejections;
}
