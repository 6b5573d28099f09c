/**
 * The voter image's entrypoint: resolves the container's environment into the voter's (launch-env.ts),
 * decides whether this start bootstraps the cluster (bootstrap-decision.ts), then runs the voter,
 * `keyload-node`, in this very process, so that it is PID 1 and gets the engine's signals itself.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { bootstrapIdFor } from "./bootstrap-decision.js";
import { recordFromSpec } from "./bootstrap-record.js";
import { type LaunchEnv, LaunchError, resolveLaunchEnv, valueIn } from "./launch-env.js";

/** Where the image keeps the compiled voter, beside this folder (publish-image.ts). */
const VOTER_MAIN = new URL("../dist/main.js", import.meta.url);
const VOTER_CONFIG = new URL("../dist/config/voter-config.js", import.meta.url);
/** How long the bootstrap record may stay out of reach before the start fails (and is retried by the engine). */
const RECORD_ATTEMPTS = 30;
const RECORD_RETRY_MS = 2_000;

/** The voter's ConfigError (config-error.ts), known by its code: this folder imports none of the voter. */
const CONFIG_ERROR = "KeyLoadInvalidConfiguration";

function codeOf(err: unknown): unknown {
  return typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
}

function log(line: string): void {
  process.stderr.write(`keyload-entrypoint: ${line}\n`);
}

interface VoterConfigModule {
  loadVoterConfig(inputs: { env: NodeJS.ProcessEnv; args: readonly string[] }): unknown;
}

async function decideBootstrap(env: LaunchEnv, voter: string): Promise<string | null> {
  const record = recordFromSpec(env.KEYLOAD_BOOTSTRAP_RECORD, env);
  if (record === undefined) return null;
  const dataDir = valueIn(env, "KeyLoad__Node__DataDir");
  if (dataDir === undefined) throw new Error("KeyLoad__Node__DataDir is not set");
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const { loadVoterConfig } = (await import(VOTER_CONFIG.href)) as VoterConfigModule;
  const args = process.argv.slice(2);
  for (let attempt = 1; ; attempt++) {
    try {
      return await bootstrapIdFor({
        record,
        voter,
        dataDir,
        validate: (bootstrapId) => {
          loadVoterConfig({ env: { ...env, KeyLoad__Cluster__BootstrapId: bootstrapId }, args });
        },
        log,
      });
    } catch (err) {
      // A setting the voter refuses is final; the record out of reach may come back.
      if (codeOf(err) === CONFIG_ERROR || attempt === RECORD_ATTEMPTS) throw err;
      log(`${record.description} is out of reach (${(err as Error).message}); trying again`);
      await new Promise((resolve) => setTimeout(resolve, RECORD_RETRY_MS));
    }
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  // The voter's own help and version need no cluster settings.
  if (args.some((arg) => ["--help", "-h", "--version"].includes(arg))) {
    await import(VOTER_MAIN.href);
    return;
  }
  const env = resolveLaunchEnv(process.env, hostname(), (path) => readFileSync(path, "utf8"));
  const voter = env.KeyLoad__Node__Id!;
  const bootstrapId = await decideBootstrap(env, voter);
  delete env.KEYLOAD_BOOTSTRAP_RECORD;
  if (bootstrapId !== null) env.KeyLoad__Cluster__BootstrapId = bootstrapId;
  for (const name of Object.keys(process.env)) delete process.env[name];
  Object.assign(process.env, env);
  await import(VOTER_MAIN.href);
}

main().catch((err: unknown) => {
  const error = err as Error;
  // The voter's own words for a configuration it refuses, and its exit status for one (main.ts).
  if (codeOf(err) === CONFIG_ERROR) {
    process.stderr.write(`keyload-node: invalid configuration: ${error.message}\n`);
    process.exit(2);
  }
  const refused = err instanceof LaunchError;
  log(refused || !error.stack ? error.message : error.stack);
  process.exit(refused ? 2 : 1);
});
