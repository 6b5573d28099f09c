#!/usr/bin/env node
/**
 * `keyload-node`: runs one voter. Configuration comes from `KeyLoad__Section__Property` environment
 * variables, `--KeyLoad:Section:Property=V` arguments and an optional `--config FILE`.
 */
import { InternalError } from "@keyload/contract";
import { ConfigError } from "./config/config-error.js";
import { configHelp } from "./config/config-help.js";
import { loadVoterConfig, VOTER_CONFIG } from "./config/voter-config.js";
import { packageVersion } from "./package-version.js";
import { StorageCorruptionError, StorageFailedError, StorageFormatError } from "./storage/storage-errors.js";
import { DataDirLockedError } from "./voter/data-dir-lock.js";
import { type RunningVoter, startVoter } from "./voter/voter.js";

/**
 * The exit status of a voter that stopped because its storage or apply failed (fail-stop), apart
 * from 1 (failed to start, failed shutdown) and 2 (invalid configuration).
 */
const FAIL_STOP_EXIT_CODE = 3;
/** How long a fail-stop waits at most for the log to be flushed. */
const FLUSH_WAIT_MS = 2_000;

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
  let voter: RunningVoter;
  try {
    // A setting may also prove unusable only as the voter starts (the TLS files): the same exit.
    voter = await startVoter(loadVoterConfig({ env: process.env, args }));
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`keyload-node: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // Fail-stop: the driver has stopped taking part in Raft and said why; the process ends once that
  // line is out, without the graceful steps, which would only wait on the failed storage. The restart
  // recovers from what is durable.
  void voter.failed.then((failure) => {
    voter.logger.fatal(
      // `failStop` and `exitCode` tell the AppHost why this voter ended when nobody saw it exit.
      { err: failure, source: failure.source, failStop: true, exitCode: FAIL_STOP_EXIT_CODE },
      "exiting: storage or apply failed (fail-stop)",
    );
    const exit = (): never => process.exit(FAIL_STOP_EXIT_CODE);
    // A log on a full or failing disk may never flush: the exit must not wait on it for long.
    setTimeout(exit, FLUSH_WAIT_MS);
    voter.logger.flush(exit);
  });
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

/**
 * What stopped the start, for the operator: a refusal with a known cause (the data directory in use, a
 * port taken, a path not writable) in its own words; storage found damaged, of another format or failing
 * in one line with its code, since a stack says nothing about a disk; anything else with its stack,
 * being a bug.
 */
function describeStartFailure(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err instanceof DataDirLockedError || typeof (err as NodeJS.ErrnoException).syscall === "string") {
    return err.message;
  }
  if (
    err instanceof StorageCorruptionError ||
    err instanceof StorageFailedError ||
    err instanceof StorageFormatError
  ) {
    return `${withCause(err)} (code ${err.code})`;
  }
  if (err instanceof InternalError && err.reason === "CorruptState") {
    return `${withCause(err)} (code ${err.code}, reason ${err.reason})`;
  }
  return err.stack ?? err.message;
}

/** The message and, when it does not say it already, its cause's (an errno, a JSON syntax error), on one line. */
function withCause(err: Error): string {
  const cause = err.cause instanceof Error ? err.cause.message : undefined;
  const message =
    cause === undefined || err.message.includes(cause) ? err.message : `${err.message}: ${cause}`;
  return message.replace(/\s*\n\s*/g, " ");
}

main().catch((err: unknown) => {
  process.stderr.write(`keyload-node: failed to start: ${describeStartFailure(err)}\n`);
  process.exit(1);
});
