import { VOTER_NAMES, type VoterName } from "./app-model.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { InvalidSettingError } from "./apphost-errors.js";
import type { ForwardedConfig } from "./config-forwarding.js";

/**
 * What `publish` writes for either target, the deployment counterpart of the application model
 * (app-model.ts): the same three voters, each with the user's forwarded configuration (contract
 * section 2) and the settings the deployment itself gives it.
 */
export const PUBLISH_TARGETS = ["compose", "kubernetes"] as const;
export type PublishTarget = (typeof PUBLISH_TARGETS)[number];

export function isPublishTarget(value: string): value is PublishTarget {
  return (PUBLISH_TARGETS as readonly string[]).includes(value);
}

/** voter1's ports; with compose's host networking voterN takes the base plus N - 1. */
export interface PublishPorts {
  readonly httpPort: number;
  readonly peerPort: number;
}

export const DEFAULT_PUBLISH_PORTS: PublishPorts = {
  httpPort: APPHOST_DEFAULTS.httpPortBase,
  peerPort: APPHOST_DEFAULTS.peerPortBase,
};

/** The credentials' files in DIR/secrets, and the names compose gives them. */
export const SECRET_FILES = { clusterSecret: "cluster_secret", adminKey: "admin_key" } as const;

/**
 * The settings the voters read from files (launch-env.ts): the secret never sits in an environment
 * that `docker inspect` or a pod spec shows.
 */
export function secretFileSettings(dir: string): Record<string, string> {
  return {
    KeyLoad__Cluster__Secret_FILE: `${dir}/${SECRET_FILES.clusterSecret}`,
    KeyLoad__Bootstrap__AdminKey_FILE: `${dir}/${SECRET_FILES.adminKey}`,
  };
}

/** Names the bootstrap record the entrypoint keeps (voter-image/bootstrap-record.ts). */
export const BOOTSTRAP_RECORD_VARIABLE = "KEYLOAD_BOOTSTRAP_RECORD";

function find(env: Readonly<Record<string, string>>, name: string): [string, string] | undefined {
  const lower = name.toLowerCase();
  return Object.entries(env).find(([key]) => key.toLowerCase() === lower);
}

/**
 * Refuses forwarded settings a published cluster decides itself. The AppHost refuses the voters'
 * identity, addresses, peer list and secret already (config-forwarding.ts); a published voter also
 * decides from its bootstrap record whether it bootstraps, so a fixed BootstrapId would bootstrap
 * again a voter that has lost its data.
 */
export function checkPublishable(forwarded: ForwardedConfig): void {
  for (const voter of VOTER_NAMES) {
    const bootstrapId = find(forwarded.voters[voter], "KeyLoad__Cluster__BootstrapId");
    if (bootstrapId !== undefined) {
      throw new InvalidSettingError(
        bootstrapId[0],
        "cannot be set for publish: each published voter bootstraps on its first start only, as its " +
          "bootstrap record says (docs/publish.md)",
      );
    }
  }
}

/** `https` when the voter is given a certificate (the Tls section), else `http`. */
export function schemeOf(env: Readonly<Record<string, string>>): "http" | "https" {
  const cert = find(env, "KeyLoad__Tls__HttpCertFile");
  return cert !== undefined && cert[1] !== "" ? "https" : "http";
}

export function voterIndex(voter: VoterName): number {
  return VOTER_NAMES.indexOf(voter);
}
