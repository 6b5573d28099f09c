#!/usr/bin/env node
/**
 * `keyload-node`: runs one voter. Configuration comes from `KeyLoad__Section__Property` environment
 * variables, `--KeyLoad:Section:Property=V` arguments and an optional `--config FILE`.
 */
import { ConfigError } from "./config/config-error.js";
import { loadVoterConfig } from "./config/voter-config.js";
import { startVoter } from "./voter/voter.js";

async function main(): Promise<void> {
  let config: ReturnType<typeof loadVoterConfig>;
  try {
    config = loadVoterConfig({ env: process.env, args: process.argv.slice(2) });
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

main().catch((err: unknown) => {
  process.stderr.write(
    `keyload-node: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
