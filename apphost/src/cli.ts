/**
 * `pnpm apphost <command>`: the AppHost command line (contract section 2). Exit status 0 on success,
 * 2 for a command line it cannot understand, 130 when interrupted (a start cut short, or a second
 * Ctrl-C that kills the voters), 1 for any other failure. One Ctrl-C is the normal end of a foreground
 * `up`, `status --watch` and `logs --follow`: 0.
 */
import {
  AppHostError,
  ControlChannelError,
  FileSystemError,
  InterruptedError,
  UsageError,
} from "./apphost-errors.js";
import { parseCli, USAGE } from "./cli-options.js";
import {
  admissionCommand,
  downCommand,
  healCommand,
  logsCommand,
  partitionCommand,
  statusCommand,
  transferLeaderCommand,
  voterCommand,
} from "./cluster-commands.js";
import { paint } from "./log-line-format.js";
import { TerminalOutput } from "./terminal-output.js";
import { upCommand } from "./up-command.js";

function report(err: AppHostError, output: TerminalOutput): void {
  // A failure the foreground AppHost reported is shown with its own code.
  const code = err instanceof ControlChannelError && err.remoteCode ? err.remoteCode : err.code;
  const [headline, ...details] = err.message.split("\n");
  output.clearStatus();
  output.error(
    [`${paint("apphost:", "\x1b[31m", output.colour)} ${headline} [${code}]`, ...details].join("\n"),
  );
}

async function run(argv: readonly string[], output: TerminalOutput): Promise<number> {
  let options: ReturnType<typeof parseCli>;
  try {
    options = parseCli(argv);
  } catch (err) {
    // Whatever is wrong with the command line (an unknown voter included) is a usage error.
    if (!(err instanceof AppHostError)) throw err;
    report(err, output);
    output.error("Run `pnpm apphost --help` for the commands and options.");
    return 2;
  }
  try {
    if (options.command === "help") {
      output.line(USAGE);
      return 0;
    }
    switch (options.command) {
      case "up":
        return await upCommand(options, output);
      case "down":
        return await downCommand(options, output);
      case "status":
        return await statusCommand(options, output);
      case "logs":
        return await logsCommand(options, output);
      case "admission":
        return await admissionCommand(options, output);
      case "transfer-leader":
        return await transferLeaderCommand(options, output);
      case "partition":
        return await partitionCommand(options, output);
      case "heal":
        return await healCommand(options, output);
      case "publish": {
        // Loaded on demand: the Kubernetes models are many modules that no other command needs.
        const { publishCommand } = await import("./publish-command.js");
        // parseCli sets the request for publish.
        return await publishCommand(options.publish!, options.envFile, output);
      }
      default:
        // parseCli guarantees a voter for every voter operation.
        return await voterCommand(options.command, options.voter!, options, output);
    }
  } catch (caught) {
    const err = fileSystemErrorOf(caught) ?? caught;
    if (!(err instanceof AppHostError)) throw err;
    report(err, output);
    // A command line found wrong only once the cluster is asked (`partition leader voter1` while
    // voter1 leads) is a usage error all the same.
    return err instanceof InterruptedError ? 130 : err instanceof UsageError ? 2 : 1;
  }
}

/**
 * A file system failure no command turned into its own error (a state dir file that cannot be written,
 * say) as one line naming the file and the system's reason, not a stack: it is about the machine, not
 * a bug of the AppHost. Undefined for anything else, which stays a crash worth its stack.
 */
function fileSystemErrorOf(err: unknown): FileSystemError | undefined {
  const { code, syscall, path } = (err ?? {}) as NodeJS.ErrnoException;
  if (!(err instanceof Error) || typeof code !== "string" || !/^E[A-Z0-9]+$/.test(code)) return undefined;
  if (typeof syscall !== "string") return undefined;
  // Node's own message names the code, the reason, the call and the path: "EACCES: permission denied, open '…'".
  const line = err.message.split("\n")[0] ?? code;
  return new FileSystemError(typeof path === "string" && !line.includes(path) ? `${line} (${path})` : line, {
    cause: err,
  });
}

/**
 * A reader that went away (`logs | head`) makes the next write fail with EPIPE, which Node reports as
 * an unhandled error and a stack trace. Its output is dropped from then on, and a command that runs
 * until told (`logs --follow`, `up`) is told, as by a closed terminal.
 */
function endOnClosedPipe(stream: NodeJS.WriteStream): void {
  let closed = false;
  stream.on("error", (err: NodeJS.ErrnoException) => {
    // Writes after the first failure fail too (ERR_STREAM_DESTROYED): nothing is read any more.
    if (closed) return;
    if (err.code !== "EPIPE") throw err;
    closed = true;
    process.emit("SIGHUP", "SIGHUP");
  });
}
endOnClosedPipe(process.stdout);
endOnClosedPipe(process.stderr);

// `pnpm apphost` puts `--` before the arguments: Node 20 takes a `--env-file` anywhere on its command
// line, even after the script, as its own (and exits when the file is missing) unless `--` comes first.
// pnpm passes a user's own `--` on too (`pnpm apphost -- status`): every leading one goes.
const args = process.argv.slice(2);
while (args[0] === "--") args.shift();
process.exitCode = await run(args, new TerminalOutput());
// Keep-alive HTTP connections of the health probes may hold the event loop open for a while after the
// work is done; they must not hold the command.
setTimeout(() => process.exit(), 500).unref();
