import { randomUUID } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import type { IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { join } from "node:path";
import { LaunchError } from "./launch-env.js";

/**
 * The published cluster's bootstrap record, the analogue of the AppHost's cluster.json
 * (cluster-bootstrap.ts): the cluster's ID, made once, and which voters have been started. It lives
 * outside every voter's data volume, so a voter whose volume is lost is known to have started before
 * and joins as a new member instead of bootstrapping again with state it no longer holds.
 */
export interface BootstrapState {
  readonly clusterId: string;
  readonly started: boolean;
}

export interface BootstrapRecord {
  /** Where the record is, for messages. */
  readonly description: string;
  /** The cluster's ID (made by the first voter to ask) and whether `voter` has started before. */
  read(voter: string): Promise<BootstrapState>;
  markStarted(voter: string): Promise<void>;
}

function durableWrite(file: string, content: string): void {
  writeFileSync(file, content, { mode: 0o600 });
  const fd = openSync(file, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function syncDir(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Creates `file` with `content` unless it exists, atomically (link(2) never replaces). */
function createOnce(file: string, content: string): void {
  // Not the pid: every voter's entrypoint is PID 1 in its own container, all writing this dir.
  const temp = `${file}.${randomUUID()}.tmp`;
  durableWrite(temp, content);
  try {
    linkSync(temp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    rmSync(temp, { force: true });
  }
}

/** A directory shared by the voters of one host (compose's `bootstrap` volume). */
export class DirectoryRecord implements BootstrapRecord {
  constructor(private readonly dir: string) {}

  get description(): string {
    return `the bootstrap record in ${this.dir}`;
  }

  async read(voter: string): Promise<BootstrapState> {
    mkdirSync(this.dir, { recursive: true });
    const idFile = join(this.dir, "cluster-id");
    createOnce(idFile, `${randomUUID()}\n`);
    syncDir(this.dir);
    const clusterId = readFileSync(idFile, "utf8").trim();
    let started = true;
    try {
      readFileSync(this.startedFile(voter));
    } catch {
      started = false;
    }
    return { clusterId, started };
  }

  async markStarted(voter: string): Promise<void> {
    createOnce(this.startedFile(voter), `${new Date().toISOString()}\n`);
    syncDir(this.dir);
  }

  private startedFile(voter: string): string {
    return join(this.dir, `started-${voter}`);
  }
}

export interface ApiResponse {
  readonly status: number;
  readonly body: unknown;
}

/** One call to the Kubernetes API: a path under `/api/v1/namespaces/<namespace>/`. */
export type KubernetesApi = (
  method: "GET" | "POST" | "PUT",
  path: string,
  body?: unknown,
) => Promise<ApiResponse>;

interface ConfigMapBody {
  readonly metadata?: { readonly resourceVersion?: string };
  readonly data?: Readonly<Record<string, string>>;
}

const CLUSTER_ID_KEY = "clusterId";
/** Optimistic updates that lose to another voter's try again; three voters settle in a few. */
const UPDATE_ATTEMPTS = 10;

/**
 * A ConfigMap, for Kubernetes, where no volume is shared among pods: the voters' ServiceAccount may
 * create it and read and update it (kubernetes/rbac.yaml). Updates carry the resourceVersion read, so
 * two voters recording themselves at once do not lose each other's entry.
 */
export class ConfigMapRecord implements BootstrapRecord {
  constructor(
    private readonly api: KubernetesApi,
    private readonly name: string,
  ) {}

  get description(): string {
    return `the bootstrap record in ConfigMap ${this.name}`;
  }

  async read(voter: string): Promise<BootstrapState> {
    const data = (await this.fetchOrCreate()).data ?? {};
    const clusterId = data[CLUSTER_ID_KEY];
    if (clusterId === undefined) throw new LaunchError(`ConfigMap ${this.name} has no ${CLUSTER_ID_KEY}`);
    return { clusterId, started: data[startedKey(voter)] !== undefined };
  }

  async markStarted(voter: string): Promise<void> {
    for (let attempt = 0; attempt < UPDATE_ATTEMPTS; attempt++) {
      const current = await this.fetchOrCreate();
      if (current.data?.[startedKey(voter)] !== undefined) return;
      const updated = await this.api("PUT", `configmaps/${this.name}`, {
        ...this.manifest({ ...current.data, [startedKey(voter)]: new Date().toISOString() }),
        metadata: { name: this.name, resourceVersion: current.metadata?.resourceVersion },
      });
      if (updated.status === 200) return;
      if (updated.status !== 409) throw this.failure("update", updated);
    }
    throw new LaunchError(
      `ConfigMap ${this.name}: ${UPDATE_ATTEMPTS} updates in a row lost to another writer`,
    );
  }

  private async fetchOrCreate(): Promise<ConfigMapBody> {
    for (;;) {
      const got = await this.api("GET", `configmaps/${this.name}`);
      if (got.status === 200) return got.body as ConfigMapBody;
      if (got.status !== 404) throw this.failure("read", got);
      const created = await this.api("POST", "configmaps", this.manifest({ [CLUSTER_ID_KEY]: randomUUID() }));
      if (created.status === 201) return created.body as ConfigMapBody;
      // 409: another voter created it first; read theirs.
      if (created.status !== 409) throw this.failure("create", created);
    }
  }

  private manifest(data: Readonly<Record<string, string>>): object {
    return {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: this.name, labels: { "app.kubernetes.io/name": "keyload" } },
      data,
    };
  }

  private failure(what: string, response: ApiResponse): LaunchError {
    const message = (response.body as { message?: unknown } | undefined)?.message;
    return new LaunchError(
      `cannot ${what} ConfigMap ${this.name}: HTTP ${response.status}${typeof message === "string" ? ` ${message}` : ""}`,
    );
  }
}

function startedKey(voter: string): string {
  return `started.${voter}`;
}

const SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";

/** The API server of the pod's own cluster, as its ServiceAccount reaches it. */
export function inClusterApi(env: Readonly<Record<string, string>>): KubernetesApi {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT ?? "443";
  if (host === undefined) {
    throw new LaunchError("KUBERNETES_SERVICE_HOST is not set: the ConfigMap record works only in a pod");
  }
  const read = (name: string): string => readFileSync(join(SERVICE_ACCOUNT, name), "utf8").trim();
  const namespace = read("namespace");
  const ca = readFileSync(join(SERVICE_ACCOUNT, "ca.crt"));
  return (method, path, body) =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = httpsRequest(
        {
          host,
          port,
          method,
          path: `/api/v1/namespaces/${namespace}/${path}`,
          ca,
          // Read at each call: the kubelet rotates the token.
          headers: {
            authorization: `Bearer ${read("token")}`,
            accept: "application/json",
            ...(payload === undefined ? {} : { "content-type": "application/json" }),
          },
          timeout: 10_000,
        },
        (res) => collect(res, resolve, reject),
      );
      req.on("timeout", () => req.destroy(new Error("the API server did not answer within 10 s")));
      req.on("error", reject);
      req.end(payload);
    });
}

function collect(
  res: IncomingMessage,
  resolve: (response: ApiResponse) => void,
  reject: (err: Error) => void,
): void {
  const chunks: Buffer[] = [];
  res.on("data", (chunk: Buffer) => chunks.push(chunk));
  res.on("error", reject);
  res.on("end", () => {
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown;
    try {
      body = text === "" ? undefined : JSON.parse(text);
    } catch {
      body = { message: text.slice(0, 200) };
    }
    resolve({ status: res.statusCode ?? 0, body });
  });
}

/**
 * The record `KEYLOAD_BOOTSTRAP_RECORD` names: `dir:/path` or `configmap:NAME`; none (empty or unset)
 * means the voters are never told to bootstrap, for a cluster bootstrapped by other means.
 */
export function recordFromSpec(
  spec: string | undefined,
  env: Readonly<Record<string, string>>,
): BootstrapRecord | undefined {
  if (spec === undefined || spec === "") return undefined;
  const colon = spec.indexOf(":");
  const kind = colon < 0 ? spec : spec.slice(0, colon);
  const where = colon < 0 ? "" : spec.slice(colon + 1);
  if (kind === "dir" && where.startsWith("/")) return new DirectoryRecord(where);
  if (kind === "configmap" && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(where)) {
    return new ConfigMapRecord(inClusterApi(env), where);
  }
  throw new LaunchError(
    `KEYLOAD_BOOTSTRAP_RECORD=${spec}: expected dir:/absolute/path or configmap:NAME (or nothing)`,
  );
}
