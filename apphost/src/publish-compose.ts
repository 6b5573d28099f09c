import { stringify } from "yaml";
import { VOTER_NAMES, type VoterName } from "./app-model.js";
import type { ForwardedConfig } from "./config-forwarding.js";
import { IMAGE_BOOTSTRAP_DIR, IMAGE_DATA_DIR, IMAGE_NODE, IMAGE_VOLUME } from "./publish-image.js";
import {
  BOOTSTRAP_RECORD_VARIABLE,
  type PublishPorts,
  SECRET_FILES,
  schemeOf,
  secretFileSettings,
  voterIndex,
} from "./publish-model.js";

/**
 * `publish --target compose`: a compose file for one host. The voters use the host's network (the
 * only kind CI's engine offers, and no NAT between peers), so each has its own ports: voterN's are the
 * base ports plus N - 1. Peers talk over loopback; the HTTP port binds every interface and advertises
 * 127.0.0.1, the address every client on this host reaches.
 */

export interface ComposeHealthcheck {
  readonly test: readonly string[];
  readonly interval: string;
  readonly timeout: string;
  readonly retries: number;
  readonly start_period: string;
}

export interface ComposeService {
  readonly image: string;
  readonly network_mode: "host";
  readonly restart: "unless-stopped";
  readonly read_only: true;
  readonly tmpfs: readonly string[];
  readonly cap_drop: readonly string[];
  readonly security_opt: readonly string[];
  readonly stop_grace_period: string;
  readonly environment: Readonly<Record<string, string>>;
  readonly secrets: readonly string[];
  readonly volumes: readonly string[];
  readonly healthcheck: ComposeHealthcheck;
}

export interface ComposeFile {
  readonly services: Readonly<Record<VoterName, ComposeService>>;
  readonly volumes: Readonly<Record<string, Readonly<Record<string, never>>>>;
  readonly secrets: Readonly<Record<string, { readonly file: string }>>;
}

/** Overrides the image without editing the file, as build-image.sh does. */
export const IMAGE_VARIABLE = "KEYLOAD_VOTER_IMAGE";
const SECRETS_DIR = "/run/secrets";
const BOOTSTRAP_VOLUME = "bootstrap";

export interface ComposeInputs {
  readonly forwarded: ForwardedConfig;
  readonly ports: PublishPorts;
  readonly image: string;
}

export function portsOf(ports: PublishPorts, voter: VoterName): PublishPorts {
  const i = voterIndex(voter);
  return { httpPort: ports.httpPort + i, peerPort: ports.peerPort + i };
}

/** `node -e`: the image has no curl. Any answer but 200, or none within the timeout, is unhealthy. */
export function healthcheckScript(url: string): string {
  // A voter's certificate is the operator's; the check only asks whether it answers.
  const insecure = url.startsWith("https:") ? 'process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0"; ' : "";
  return `${insecure}fetch(${JSON.stringify(url)}).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))`;
}

/** Compose interpolates `$` in values; `$$` is a literal one. */
function literal(value: string): string {
  return value.replaceAll("$", "$$$$");
}

export function composeModel({ forwarded, ports, image }: ComposeInputs): ComposeFile {
  const peers = VOTER_NAMES.map((v) => `${v}@127.0.0.1:${portsOf(ports, v).peerPort}`).join(",");
  const services = {} as Record<VoterName, ComposeService>;
  for (const voter of VOTER_NAMES) {
    const own = portsOf(ports, voter);
    const userEnv = forwarded.voters[voter];
    const url = `${schemeOf(userEnv)}://127.0.0.1:${own.httpPort}`;
    const environment: Record<string, string> = {};
    for (const [name, value] of Object.entries(userEnv)) environment[name] = literal(value);
    Object.assign(environment, {
      KeyLoad__Node__Id: voter,
      KeyLoad__Node__HttpHost: "0.0.0.0",
      KeyLoad__Node__HttpPort: String(own.httpPort),
      KeyLoad__Node__HttpAdvertisedUrl: url,
      KeyLoad__Node__PeerHost: "127.0.0.1",
      KeyLoad__Node__PeerPort: String(own.peerPort),
      KeyLoad__Node__DataDir: IMAGE_DATA_DIR,
      KeyLoad__Cluster__Voters: peers,
      ...secretFileSettings(SECRETS_DIR),
      [BOOTSTRAP_RECORD_VARIABLE]: `dir:${IMAGE_BOOTSTRAP_DIR}`,
    });
    services[voter] = {
      image: `\${${IMAGE_VARIABLE}:-${image}}`,
      network_mode: "host",
      restart: "unless-stopped",
      // The voter writes only to its volumes; /tmp is for SQLite's temporary files.
      read_only: true,
      tmpfs: ["/tmp"],
      cap_drop: ["ALL"],
      security_opt: ["no-new-privileges:true"],
      // The voter's own shutdown finishes what it has started; SIGKILL only after this.
      stop_grace_period: "30s",
      environment,
      secrets: [SECRET_FILES.clusterSecret, SECRET_FILES.adminKey],
      volumes: [`${voter}-data:${IMAGE_VOLUME}`, `${BOOTSTRAP_VOLUME}:${IMAGE_BOOTSTRAP_DIR}`],
      healthcheck: {
        test: ["CMD", IMAGE_NODE, "-e", healthcheckScript(`${url}/health/ready`)],
        interval: "5s",
        timeout: "3s",
        retries: 3,
        start_period: "30s",
      },
    };
  }
  const volumes: Record<string, Record<string, never>> = { [BOOTSTRAP_VOLUME]: {} };
  for (const voter of VOTER_NAMES) volumes[`${voter}-data`] = {};
  return {
    services,
    volumes,
    secrets: {
      [SECRET_FILES.clusterSecret]: { file: `./secrets/${SECRET_FILES.clusterSecret}` },
      [SECRET_FILES.adminKey]: { file: `./secrets/${SECRET_FILES.adminKey}` },
    },
  };
}

const HEADER = `# KeyLoad: three voters on one host, written by \`pnpm apphost publish --target compose\`
# (docs/publish.md). Build the image with ./build-image.sh, then: docker-compose -p keyload up -d
# Regenerated by each publish into this dir: keep changes in a compose override file.
`;

export function composeYaml(model: ComposeFile): string {
  return `${HEADER}${stringify(model, { lineWidth: 0 })}`;
}
