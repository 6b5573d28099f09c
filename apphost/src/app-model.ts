import { join, resolve } from "node:path";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { UnknownVoterError } from "./apphost-errors.js";

/**
 * The application model, as an Aspire AppHost declares its resources: three named voters, each with
 * its ports, data dir and log file, all sharing the peer list, the cluster secret and the admin key.
 */
export const VOTER_NAMES = ["voter1", "voter2", "voter3"] as const;
export type VoterName = (typeof VOTER_NAMES)[number];

export function isVoterName(name: string): name is VoterName {
  return (VOTER_NAMES as readonly string[]).includes(name);
}

export function parseVoterName(name: string): VoterName {
  if (!isVoterName(name)) throw new UnknownVoterError(name, VOTER_NAMES);
  return name;
}

export interface VoterPorts {
  readonly httpPort: number;
  readonly peerPort: number;
}

export interface VoterResource extends VoterPorts {
  readonly name: VoterName;
  readonly host: string;
  readonly dataDir: string;
  readonly logFile: string;
}

/** The files of a state dir, whatever the ports of the cluster in it. */
export interface StateDirPaths {
  readonly stateDir: string;
  /** The bootstrap admin API key, in plain text (contract section 2). */
  readonly adminKeyFile: string;
  readonly secretFile: string;
  /** The AppHost's own record of a cluster: pids, ports, forwarded configuration. */
  readonly stateFile: string;
  /** The cluster's ID and which voters have started once (cluster-bootstrap.ts). */
  readonly bootstrapFile: string;
  /** What each voter was last seen to be in the configuration (member-memory.ts). */
  readonly membersFile: string;
  readonly logDir: string;
}

export interface AppModel extends StateDirPaths {
  readonly voters: readonly VoterResource[];
}

export function defaultPorts(): VoterPorts[] {
  return VOTER_NAMES.map((_, i) => ({
    httpPort: APPHOST_DEFAULTS.httpPortBase + i,
    peerPort: APPHOST_DEFAULTS.peerPortBase + i,
  }));
}

export function stateDirPaths(stateDir: string): StateDirPaths {
  const root = resolve(stateDir);
  return {
    stateDir: root,
    adminKeyFile: join(root, "admin.key"),
    secretFile: join(root, "cluster.secret"),
    stateFile: join(root, "apphost.json"),
    bootstrapFile: join(root, "cluster.json"),
    membersFile: join(root, "members.json"),
    logDir: join(root, "logs"),
  };
}

/** The model for a state dir; `ports` lists voter1's first, one entry per voter. */
export function buildAppModel(stateDir: string, ports: readonly VoterPorts[]): AppModel {
  const paths = stateDirPaths(stateDir);
  return {
    ...paths,
    voters: VOTER_NAMES.map((name, i) => {
      const p = ports[i]!;
      return {
        name,
        host: APPHOST_DEFAULTS.host,
        httpPort: p.httpPort,
        peerPort: p.peerPort,
        dataDir: join(paths.stateDir, name),
        logFile: join(paths.logDir, `${name}.log`),
      };
    }),
  };
}

export function findVoter(model: AppModel, name: VoterName): VoterResource {
  const voter = model.voters.find((v) => v.name === name);
  if (!voter) throw new UnknownVoterError(name, VOTER_NAMES);
  return voter;
}

export const httpUrlOf = (v: VoterResource): string => `http://${v.host}:${v.httpPort}`;
export const peerAddressOf = (v: VoterResource): string => `${v.host}:${v.peerPort}`;

/** The credentials every voter of one cluster shares. */
export interface ClusterCredentials {
  readonly secret: string;
  readonly adminKey: string;
}

/**
 * The settings the AppHost itself gives a voter: its identity, addresses and data dir, the peer list,
 * the shared credentials, and on its first start the ID of the cluster it bootstraps. They are applied
 * over the forwarded user configuration.
 */
export function voterWiring(
  model: AppModel,
  voter: VoterResource,
  credentials: ClusterCredentials,
  bootstrapId: string | null,
): Record<string, string> {
  return {
    ...(bootstrapId === null ? {} : { KeyLoad__Cluster__BootstrapId: bootstrapId }),
    KeyLoad__Node__Id: voter.name,
    KeyLoad__Node__HttpHost: voter.host,
    KeyLoad__Node__HttpPort: String(voter.httpPort),
    KeyLoad__Node__PeerHost: voter.host,
    KeyLoad__Node__PeerPort: String(voter.peerPort),
    KeyLoad__Node__DataDir: voter.dataDir,
    KeyLoad__Cluster__Voters: model.voters.map((v) => `${v.name}@${peerAddressOf(v)}`).join(","),
    KeyLoad__Cluster__Secret: credentials.secret,
    KeyLoad__Bootstrap__AdminKey: credentials.adminKey,
  };
}
