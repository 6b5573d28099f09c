import { isIPv4, isIPv6 } from "node:net";
import { InvalidArgumentError } from "@keyload/contract";
import {
  COMMAND_ADMISSION_PROPERTIES,
  type CommandAdmissionLimits,
} from "../admission/command-admission-options.js";
import type { DiskFloorSettings } from "../admission/disk-floor.js";
import { HTTP_ADMISSION_PROPERTIES, type HttpAdmissionLimits } from "../admission/http-admission-options.js";
import { DEFAULT_STORAGE_LIMITS, type SqliteLimits, type StorageLimits } from "../fs/sqlite-limits.js";
import { DEFAULT_MAX_HTTP_CONNECTIONS } from "../http/http-connections.js";
import { DEFAULT_NOTABLE_LINES_PER_SECOND } from "../http/notable-line-budget.js";
import { DEFAULT_SLOW_REQUEST_MS } from "../http/request-observer.js";
import { DEFAULT_MAX_FRAME_BYTES } from "../peer/frame-codec.js";
import type { PeerAddress } from "../peer/peer-address.js";
import { type CanonicalLimits, DEFAULT_LIMITS, resolveLimits } from "../state/limits.js";
import { ConfigError } from "./config-error.js";
import { type ConfigProperty, deprecated, integer, oneOf, type RawValue, text } from "./config-property.js";
import {
  type RawSettings,
  readArguments,
  readEnvironment,
  readJsonFile,
  settingKey,
} from "./config-sources.js";

const ID = /^[A-Za-z0-9._-]{1,64}$/;
const HOST = /^[A-Za-z0-9.:_-]{1,253}$/;
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** The Storage section's prefix of each database's three settings. */
const DATABASES = { Log: "log", State: "state", Search: "search" } as const;

function voterList(name: "Voters"): ConfigProperty<"Voters", readonly PeerAddress[]> {
  return {
    name,
    expected: "a comma-separated list of id@host:port peer addresses, ids distinct",
    parse: (raw: RawValue) => {
      if (typeof raw !== "string") return undefined;
      const voters: PeerAddress[] = [];
      for (const item of raw.split(",")) {
        const match = /^\s*([A-Za-z0-9._-]{1,64})@([A-Za-z0-9.:_-]+):(\d{1,5})\s*$/.exec(item);
        if (!match) return undefined;
        const port = Number(match[3]);
        if (port < 1 || port > 65535) return undefined;
        voters.push({ id: match[1]!, host: match[2]!, port });
      }
      return new Set(voters.map((v) => v.id)).size === voters.length ? voters : undefined;
    },
  };
}

function baseUrl(name: "HttpAdvertisedUrl"): ConfigProperty<"HttpAdvertisedUrl", string> {
  return {
    name,
    default: "",
    expected:
      "empty, or an absolute http(s) URL with no path, query or credentials (https://voter1.example:7101)",
    parse: (raw: RawValue) => {
      if (typeof raw !== "string") return undefined;
      if (raw === "") return "";
      if (/[?#\s]/.test(raw)) return undefined;
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        return undefined;
      }
      if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
      if (url.username !== "" || url.password !== "" || url.pathname !== "/") return undefined;
      // As the client compares endpoints: `https://h:443/` and `https://h` are one voter.
      return url.origin;
    },
  };
}

/** Every section and property a voter reads, with defaults and validation: declared once, here. */
export const VOTER_CONFIG = {
  Node: [
    text("Id", undefined, ID, "1-64 characters of [A-Za-z0-9._-]"),
    text("HttpHost", "127.0.0.1", HOST, "a host name or IP address"),
    integer("HttpPort", 7101, 0, 65535),
    // The base URL peers hand out as this voter's (leader hints); "": http(s)://HttpHost:HttpPort.
    baseUrl("HttpAdvertisedUrl"),
    text("PeerHost", "127.0.0.1", HOST, "a host name or IP address"),
    // Not 0: its peers dial the port Cluster:Voters names, never one the kernel picks.
    integer("PeerPort", 7201, 1, 65535),
    text("DataDir", undefined, /^.+$/s, "a directory path"),
  ],
  Cluster: [
    voterList("Voters"),
    text("Secret", undefined, /^.{16,}$/s, "at least 16 characters", true),
    // Set only for a new cluster's first start: a voter on empty storage then bootstraps it with this ID;
    // otherwise it joins as a new member, to be added (member-identity.ts). Ignored once it holds data.
    text("BootstrapId", "", /^([A-Za-z0-9._-]{1,64})?$/, "empty, or 1-64 characters of [A-Za-z0-9._-]"),
    // A new member (storage lost) asks the leader to add it as a learner in place of the member of its
    // name and to promote it once caught up (member-joiner.ts); `manual` leaves both to an admin, as etcd.
    oneOf("NewMemberJoin", "automatic", ["automatic", "manual"]),
  ],
  // The public HTTP port's certificate and key: both serve HTTPS, neither plain HTTP (checkConsistency).
  // Read and checked when the voter starts (http-tls-files.ts).
  Tls: [
    text("HttpCertFile", "", /^.*$/s, "empty, or the path of a PEM certificate (chain) file"),
    text("HttpKeyFile", "", /^.*$/s, "empty, or the path of the PEM private key of HttpCertFile"),
  ],
  Raft: [
    integer("ElectionTimeoutMs", 1000, 10, 600_000),
    integer("HeartbeatIntervalMs", 100, 1, 60_000),
    integer("ReplicationDeadlineMs", 10_000, 1, 3_600_000),
    // How often the log is compacted behind a snapshot point (which copies nothing: the state is
    // copied only for a follower that needs it, docs/decisions/0021-lazy-snapshots.md). 100,000 is
    // etcd 3.4's snapshot-count; SnapshotIntervalBytes still bounds the log in between
    // (docs/decisions/0014-snapshot-intervals.md).
    integer("SnapshotIntervalEntries", 100_000, 1),
    integer("SnapshotIntervalBytes", 64 * MiB, 1),
    deprecated(
      integer("SnapshotSizeRatio", 2, 0, 1000),
      "snapshot points copy nothing, so there is no snapshot size to bound " +
        "(docs/decisions/0021-lazy-snapshots.md); remove it, a later major version refuses it",
    ),
    integer("MaxUncommittedBytes", 64 * MiB, 1),
    // How far the applied index may trail the commit index for `/health/ready` to report ready.
    integer("ReadyLagEntries", 1000, 0),
    // How long a follower holds committed entries back, to apply them together, when no append comes
    // to carry their apply (FollowerApplyPolicy.holdsBack); neither a read through it nor the answer to a command
    // it forwarded waits for them.
    integer("FollowerApplyHoldMs", 10, 1, 60_000),
    // One chunk of a snapshot sent to a follower; four are in flight at once. Well under the peer
    // frame's cap, and large enough that a chunk's round trip is not what bounds a transfer.
    integer("SnapshotChunkBytes", MiB, 4096, 16 * MiB),
  ],
  CommandAdmission: COMMAND_ADMISSION_PROPERTIES,
  HttpAdmission: HTTP_ADMISSION_PROPERTIES,
  // Bounds on open connections, whatever they carry.
  Connections: [
    integer("MaxHttp", DEFAULT_MAX_HTTP_CONNECTIONS, 1, 1_000_000),
    // Peer connections not yet authenticated, in all (beyond it the oldest is closed) and from one
    // source address (beyond it a new one is). A voter dials a peer once at a time: a voter host needs
    // one per voter.
    integer("MaxPeerHandshakes", 64, 1, 100_000),
    integer("MaxPeerHandshakesPerSource", 8, 1, 100_000),
    integer("PeerHandshakeTimeoutMs", 2_000, 100, 60_000),
  ],
  Canonical: (Object.keys(DEFAULT_LIMITS) as (keyof CanonicalLimits)[]).map((key) =>
    integer(pascal(key), DEFAULT_LIMITS[key], 1),
  ),
  Disk: [
    // 0: the compaction reserve (what one more snapshot of the current state takes) plus MarginBytes.
    integer("SoftFloorBytes", 0, 0),
    integer("MarginBytes", 256 * MiB, 0),
    integer("HardFloorBytes", 64 * MiB, 0),
    integer("ProbeIntervalMs", 1000, 10, 60_000),
  ],
  // Each database's page cache, mapping (0: none) and the size its WAL is cut back to after a checkpoint
  // (checkpoints start by half of it). The mapping stays under SQLite's own cap of 2 GiB.
  Storage: Object.entries(DATABASES).flatMap(([prefix, db]) => [
    integer(`${prefix}CacheBytes`, DEFAULT_STORAGE_LIMITS[db].cacheBytes, MiB, 16 * GiB),
    integer(`${prefix}MmapBytes`, DEFAULT_STORAGE_LIMITS[db].mmapBytes, 0, GiB),
    integer(`${prefix}WalLimitBytes`, DEFAULT_STORAGE_LIMITS[db].walLimitBytes, MiB, 16 * GiB),
  ]),
  Bootstrap: [
    text("AdminKey", undefined, /^[\x21-\x7e]{16,256}$/, "16-256 printable characters without spaces", true),
  ],
  Log: [
    oneOf("Level", "info", ["fatal", "error", "warn", "info", "debug", "trace", "silent"]),
    integer("SlowRequestMs", DEFAULT_SLOW_REQUEST_MS, 1, 3_600_000),
    integer("NotableRequestLinesPerSecond", DEFAULT_NOTABLE_LINES_PER_SECOND, 1, 1_000_000),
  ],
} as const;

export interface VoterConfig {
  readonly node: {
    readonly id: string;
    readonly httpHost: string;
    readonly httpPort: number;
    /** The advertised base URL as given, normalized to its origin; "" derives it from HttpHost:HttpPort. */
    readonly httpAdvertisedUrl: string;
    readonly peerHost: string;
    readonly peerPort: number;
    readonly dataDir: string;
  };
  readonly cluster: {
    readonly voters: readonly PeerAddress[];
    readonly secret: string;
    /** The ID of the new cluster to bootstrap on empty storage, or "" to join an existing one. */
    readonly bootstrapId: string;
    /** Whether a new member asks the leader to add and promote it (member-joiner.ts), or waits for an admin. */
    readonly newMemberJoin: "automatic" | "manual";
  };
  readonly tls: {
    /** "" (and httpKeyFile ""): plain HTTP. */
    readonly httpCertFile: string;
    readonly httpKeyFile: string;
  };
  readonly raft: {
    readonly electionTimeoutMs: number;
    readonly heartbeatIntervalMs: number;
    readonly replicationDeadlineMs: number;
    readonly snapshotIntervalEntries: number;
    readonly snapshotIntervalBytes: number;
    readonly maxUncommittedBytes: number;
    readonly readyLagEntries: number;
    readonly followerApplyHoldMs: number;
    readonly snapshotChunkBytes: number;
  };
  readonly commandAdmission: CommandAdmissionLimits;
  readonly httpAdmission: HttpAdmissionLimits;
  readonly connections: {
    readonly maxHttp: number;
    readonly maxPeerHandshakes: number;
    readonly maxPeerHandshakesPerSource: number;
    readonly peerHandshakeTimeoutMs: number;
  };
  readonly canonical: CanonicalLimits;
  readonly disk: DiskFloorSettings;
  readonly storage: StorageLimits;
  readonly bootstrap: { readonly adminKey: string };
  readonly log: {
    readonly level: string;
    /** A request that takes at least this long gets its line at info rather than debug (request-observer.ts). */
    readonly slowRequestMs: number;
    /** How many of those lines at info a second at most; the rest go at debug (notable-line-budget.ts). */
    readonly notableRequestLinesPerSecond: number;
  };
  /** Deprecated settings the sources set, in the order read: the voter warns of each at start. */
  readonly deprecations: readonly ConfigDeprecation[];
}

/** A deprecated setting some source set (ConfigProperty.deprecated). */
export interface ConfigDeprecation {
  /** `KeyLoad:Section:Property`. */
  readonly key: string;
  /** Where the value came from, as error messages name it. */
  readonly source: string;
  readonly message: string;
}

export interface ConfigInputs {
  readonly env?: NodeJS.ProcessEnv;
  readonly args?: readonly string[];
}

/**
 * Reads the configuration, lowest precedence first: defaults, the JSON file named by `--config`,
 * `KeyLoad__Section__Property` environment variables, `--KeyLoad:Section:Property=V` arguments.
 * Keys are case-insensitive. Any invalid, missing or unknown key throws a ConfigError naming it.
 */
export function loadVoterConfig(inputs: ConfigInputs = {}): VoterConfig {
  const fromArgs: RawSettings = new Map();
  const configFile = readArguments(inputs.args ?? [], fromArgs);
  const settings: RawSettings = new Map();
  if (configFile) readJsonFile(configFile, settings);
  readEnvironment(inputs.env ?? {}, settings);
  for (const [key, setting] of fromArgs) settings.set(key, setting);

  const consumed = new Set<string>();
  const deprecations: ConfigDeprecation[] = [];
  const section = <T extends readonly ConfigProperty[]>(name: keyof typeof VOTER_CONFIG, table: T) =>
    resolveSection(name, table, settings, consumed, deprecations);

  const node = section("Node", VOTER_CONFIG.Node);
  const cluster = section("Cluster", VOTER_CONFIG.Cluster);
  const tls = section("Tls", VOTER_CONFIG.Tls);
  const raft = section("Raft", VOTER_CONFIG.Raft);
  const commandAdmission = section("CommandAdmission", VOTER_CONFIG.CommandAdmission);
  const httpAdmission = section("HttpAdmission", VOTER_CONFIG.HttpAdmission);
  const connections = section("Connections", VOTER_CONFIG.Connections);
  const canonical = section("Canonical", VOTER_CONFIG.Canonical);
  const disk = section("Disk", VOTER_CONFIG.Disk);
  const storage = section("Storage", VOTER_CONFIG.Storage);
  const bootstrap = section("Bootstrap", VOTER_CONFIG.Bootstrap);
  const log = section("Log", VOTER_CONFIG.Log);

  for (const [key, setting] of settings) {
    if (!consumed.has(key)) {
      throw new ConfigError(
        `KeyLoad:${setting.section}:${setting.property}`,
        `is not a known setting (from ${setting.source})`,
      );
    }
  }

  const config: VoterConfig = {
    node: camel(node) as VoterConfig["node"],
    cluster: camel(cluster) as VoterConfig["cluster"],
    tls: camel(tls) as VoterConfig["tls"],
    raft: camel(raft) as VoterConfig["raft"],
    commandAdmission: commandAdmission as unknown as CommandAdmissionLimits,
    httpAdmission: httpAdmission as unknown as HttpAdmissionLimits,
    connections: camel(connections) as VoterConfig["connections"],
    canonical: camel(canonical) as unknown as CanonicalLimits,
    disk: camel(disk) as unknown as DiskFloorSettings,
    storage: storageLimits(storage),
    bootstrap: camel(bootstrap) as VoterConfig["bootstrap"],
    log: camel(log) as VoterConfig["log"],
    deprecations,
  };
  checkConsistency(config);
  return config;
}

function resolveSection(
  section: string,
  table: readonly ConfigProperty[],
  settings: RawSettings,
  consumed: Set<string>,
  deprecations: ConfigDeprecation[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const property of table) {
    const key = settingKey(section, property.name);
    const setting = settings.get(key);
    const name = `KeyLoad:${section}:${property.name}`;
    if (!setting) {
      // A deprecated setting left unset has nothing to say.
      if (property.deprecated !== undefined) continue;
      if (property.default === undefined) throw new ConfigError(name, `is required (${property.expected})`);
      out[property.name] = property.default;
      continue;
    }
    consumed.add(key);
    const value = property.parse(setting.value);
    if (value === undefined) {
      const shown = property.secret ? "a value" : JSON.stringify(setting.value);
      throw new ConfigError(name, `must be ${property.expected}; ${setting.source} gives ${shown}`);
    }
    if (property.deprecated !== undefined) {
      deprecations.push({
        key: name,
        source: setting.source,
        message: `is deprecated and has no effect: ${property.deprecated}`,
      });
      continue;
    }
    out[property.name] = value;
  }
  return out;
}

function checkConsistency(config: VoterConfig): void {
  const self = config.cluster.voters.find((v) => v.id === config.node.id);
  if (!self) {
    throw new ConfigError("KeyLoad:Cluster:Voters", `must include this node's id ${config.node.id}`);
  }
  if (config.raft.heartbeatIntervalMs * 2 > config.raft.electionTimeoutMs) {
    throw new ConfigError("KeyLoad:Raft:HeartbeatIntervalMs", "must be at most half of ElectionTimeoutMs");
  }
  const { softFloorBytes, hardFloorBytes } = config.disk;
  if (softFloorBytes !== 0 && softFloorBytes < hardFloorBytes) {
    throw new ConfigError("KeyLoad:Disk:SoftFloorBytes", "must be 0 (derived) or at least HardFloorBytes");
  }
  checkCanonicalLimits(config.canonical);
  checkPeerCarriedPayloads(config);
  checkHttpAddress(config);
}

/**
 * What one peer frame carries besides a payload, at most: a forwarded command's other fields (IDs of
 * at most 256 characters, a key of at most 512 characters, each escaped to at most 6 bytes), field
 * names, the request's ID and channel, or an entry's envelope and the append's own fields. Generous:
 * these come to about 5 KiB at worst.
 */
const PEER_FRAME_ALLOWANCE_BYTES = 64 * 1024;

/**
 * The largest payload a peer frame carries whatever its bytes. A follower forwards a body to the leader
 * as a JSON string (voter/command-router.ts), where each byte of a valid JSON body takes at most two (a
 * quote, a backslash, a tab or a line break is escaped as two; the edge takes JSON bodies only); the
 * leader's append carries it unescaped, so the forward is the larger frame.
 */
const MAX_PEER_CARRIED_PAYLOAD_BYTES = Math.floor((DEFAULT_MAX_FRAME_BYTES - PEER_FRAME_ALLOWANCE_BYTES) / 2);

/**
 * Refuses a body or mutation limit the peer transport could not carry: a write that large would be
 * admitted, then fail every append or forward (the frame is over the cap) and cost the leader its
 * leadership, without ever committing.
 */
function checkPeerCarriedPayloads(config: VoterConfig): void {
  const limits = [
    ["Canonical:MaxMutationBytes", config.canonical.maxMutationBytes],
    ["HttpAdmission:MaxDataBodyBytes", config.httpAdmission.MaxDataBodyBytes],
    ["HttpAdmission:MaxControlBodyBytes", config.httpAdmission.MaxControlBodyBytes],
  ] as const;
  for (const [key, value] of limits) {
    if (value <= MAX_PEER_CARRIED_PAYLOAD_BYTES) continue;
    throw new ConfigError(
      `KeyLoad:${key}`,
      `is ${value}, more than the peer transport carries: a forwarded body is JSON-escaped (up to twice ` +
        `its bytes) into one peer frame, whose cap is ${DEFAULT_MAX_FRAME_BYTES} bytes; ` +
        `set it to at most ${MAX_PEER_CARRIED_PAYLOAD_BYTES}`,
    );
  }
}

/** The canonical limits' own cross-checks, refused here rather than once storage is open. */
function checkCanonicalLimits(canonical: CanonicalLimits): void {
  try {
    resolveLimits(canonical);
  } catch (err) {
    if (!(err instanceof InvalidArgumentError)) throw err;
    const limit = err.details?.limit;
    throw new ConfigError(`KeyLoad:Canonical:${typeof limit === "string" ? pascal(limit) : ""}`, err.message);
  }
}

/** TLS is on with both files or off with neither, and the advertised URL says which and where. */
function checkHttpAddress(config: VoterConfig): void {
  const { httpCertFile, httpKeyFile } = config.tls;
  if ((httpCertFile === "") !== (httpKeyFile === "")) {
    const [unset, set] =
      httpCertFile === "" ? ["HttpCertFile", "HttpKeyFile"] : ["HttpKeyFile", "HttpCertFile"];
    throw new ConfigError(
      `KeyLoad:Tls:${unset}`,
      `is required when KeyLoad:Tls:${set} is set (set both to serve HTTPS, neither for plain HTTP)`,
    );
  }
  const scheme = httpCertFile === "" ? "http" : "https";
  const { httpHost, httpPort, httpAdvertisedUrl } = config.node;
  if (httpAdvertisedUrl === "") {
    // Peers would hand clients 0.0.0.0 as the leader's address: it reaches no voter from elsewhere.
    if (isWildcard(httpHost)) {
      throw new ConfigError(
        "KeyLoad:Node:HttpAdvertisedUrl",
        `is required when KeyLoad:Node:HttpHost is the wildcard address ${httpHost}: set it to the URL ` +
          `clients and peers reach this voter at, e.g. ${scheme}://voter1.example:${httpPort || 7101}`,
      );
    }
    return;
  }
  if (!httpAdvertisedUrl.startsWith(`${scheme}:`)) {
    throw new ConfigError(
      "KeyLoad:Node:HttpAdvertisedUrl",
      `must be an ${scheme} URL, not ${httpAdvertisedUrl}: the voter serves ` +
        (scheme === "https" ? "HTTPS (KeyLoad:Tls is set)" : "plain HTTP (KeyLoad:Tls is not set)"),
    );
  }
}

/** An address that binds every interface: 0.0.0.0 or IPv6's unspecified address, in any spelling. */
function isWildcard(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  if (isIPv4(bare)) return bare === "0.0.0.0";
  return isIPv6(bare) && bare.split(":").every((group) => /^0*$/.test(group));
}

function storageLimits(record: Record<string, unknown>): StorageLimits {
  const limits = (prefix: keyof typeof DATABASES): SqliteLimits => ({
    cacheBytes: record[`${prefix}CacheBytes`] as number,
    mmapBytes: record[`${prefix}MmapBytes`] as number,
    walLimitBytes: record[`${prefix}WalLimitBytes`] as number,
  });
  return { log: limits("Log"), state: limits("State"), search: limits("Search") };
}

function pascal(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

function camel(record: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(record)) out[k.charAt(0).toLowerCase() + k.slice(1)] = v;
  return out;
}
