import { join } from "node:path";
import { pickFreePorts } from "../../net/free-ports.js";

export const ADMIN_KEY = "test-admin-key-0123456789";

export interface ClusterOptions {
  /** `KeyLoad__...` variables for every voter. */
  readonly env?: Record<string, string>;
  /** Per voter (by index) extra variables. */
  readonly voterEnv?: Record<number, Record<string, string>>;
  /**
   * The peer ports voter `i` dials, given every voter's real peer port: lets a test route one voter's
   * connections through a relay it controls. Default: the real ports.
   */
  readonly dialPorts?: (i: number, peerPorts: readonly number[]) => readonly number[];
  /** Takes each log line (JSON text) of voter `i` at info and above; without it the voters log nothing. */
  readonly logLines?: (i: number, text: string) => void;
}

/**
 * The settings of a three-voter test cluster (VoterCluster) on loopback, with its data dirs under
 * `root` and ports picked free.
 */
export async function clusterEnvs(
  root: string,
  options: ClusterOptions = {},
): Promise<Record<string, string>[]> {
  const ports = await pickFreePorts("127.0.0.1", 6);
  const peerPorts = ports.slice(0, 3);
  const voterList = (dialed: readonly number[]) =>
    dialed.map((p, i) => `voter${i + 1}@127.0.0.1:${p}`).join(",");
  return [0, 1, 2].map((i) => ({
    KeyLoad__Node__Id: `voter${i + 1}`,
    KeyLoad__Node__DataDir: join(root, `voter${i + 1}`),
    KeyLoad__Node__HttpPort: String(ports[3 + i]),
    KeyLoad__Node__PeerPort: String(peerPorts[i]),
    KeyLoad__Cluster__Voters: voterList(options.dialPorts?.(i, peerPorts) ?? peerPorts),
    KeyLoad__Cluster__Secret: "cluster-secret-0123456789",
    // Every voter of a test cluster starts empty the first time: a new cluster.
    KeyLoad__Cluster__BootstrapId: "test-cluster",
    KeyLoad__Bootstrap__AdminKey: ADMIN_KEY,
    KeyLoad__Raft__ElectionTimeoutMs: "300",
    KeyLoad__Raft__HeartbeatIntervalMs: "30",
    KeyLoad__Log__Level: "silent",
    ...options.env,
    ...options.voterEnv?.[i],
  }));
}

/**
 * The settings of a one-voter cluster (it elects itself) in `dataDir` on the given loopback ports,
 * with fast elections and `extra` over them.
 */
export function singleVoterEnv(
  dataDir: string,
  httpPort: number,
  peerPort: number,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    KeyLoad__Node__Id: "voter1",
    KeyLoad__Node__DataDir: dataDir,
    KeyLoad__Node__HttpPort: String(httpPort),
    KeyLoad__Node__PeerPort: String(peerPort),
    KeyLoad__Cluster__Voters: `voter1@127.0.0.1:${peerPort}`,
    KeyLoad__Cluster__Secret: "cluster-secret-0123456789",
    // Every voter of a test cluster starts empty the first time: a new cluster.
    KeyLoad__Cluster__BootstrapId: "test-cluster",
    KeyLoad__Bootstrap__AdminKey: ADMIN_KEY,
    KeyLoad__Raft__ElectionTimeoutMs: "200",
    KeyLoad__Raft__HeartbeatIntervalMs: "20",
    KeyLoad__Log__Level: "silent",
    ...extra,
  };
}
