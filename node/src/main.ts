#!/usr/bin/env node
/**
 * `keyload-node`: runs one voter. Configuration comes from `KeyLoad__Section__Property` environment
 * variables, `--KeyLoad:Section:Property=V` arguments and an optional `--config FILE`.
 */
import { readFileSync } from "node:fs";
import { ConfigError } from "./config/config-error.js";
import { configHelp } from "./config/config-help.js";
import { loadVoterConfig, VOTER_CONFIG } from "./config/voter-config.js";
import { DataDirLockedError } from "./voter/data-dir-lock.js";
import { startVoter } from "./voter/voter.js";

async function main(): Promise<void> {
  // pnpm passes the `--` that separates its own options through; it is not ours.
  const args = process.argv.slice(2).filter((arg) => arg !== "--");
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(configHelp("keyload-node", VOTER_CONFIG));
    return;
  }
  if (args.includes("--version")) {
    process.stdout.write(`keyload-node ${packageVersion()}\n`);
    return;
  }
  let config: ReturnType<typeof loadVoterConfig>;
  try {
    config = loadVoterConfig({ env: process.env, args });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`keyload-node: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const voter = await startVoter(config);
  let signals = 0;
  const stop = (signal: string): void => {
    signals++;
    if (signals > 1) {
      voter.logger.warn({ signal }, "second signal: exiting at once");
      process.exit(1);
    }
    voter.logger.info({ signal }, "stopping");
    voter.shutdown().then(
      () => process.exit(0),
      (err: unknown) => {
        voter.logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

/** The version in this package's package.json, one level above both src/ and dist/. */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

/**
 * What stopped the start, for the operator: a refusal with a known cause (the data directory in use, a
 * port taken, a path not writable) in its own words; anything else with its stack, being a bug.
 */
function describeStartFailure(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err instanceof DataDirLockedError || typeof (err as NodeJS.ErrnoException).syscall === "string") {
    return err.message;
  }
  return err.stack ?? err.message;
}

main().catch((err: unknown) => {
  process.stderr.write(`keyload-node: failed to start: ${describeStartFailure(err)}\n`);
  process.exit(1);
});
