import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { UsageError } from "./apphost-errors.js";
import { parseCount, parseDuration } from "./cli-duration.js";
import { parseGroups, parseVoterTarget } from "./cli-targets.js";
import type { VoterTarget } from "./cluster-leader.js";
import { VOTER_OPERATIONS, type VoterOperation } from "./control-channel.js";
import { parseDashboardPort } from "./dashboard-port.js";
import type { PublishRequest } from "./publish-command.js";
import { defaultImageName } from "./publish-image.js";
import { DEFAULT_PUBLISH_PORTS, isPublishTarget, PUBLISH_TARGETS } from "./publish-model.js";
import { REPO_ROOT } from "./repo-layout.js";
import { parseRuntimeKind, type RuntimeKind } from "./runtime-kind.js";

export const USAGE = `Usage: pnpm apphost <command> [options]

Commands:
  up [--detach] [--fresh] [--isolated]   start the three voters and wait until the cluster is ready;
                                         in the foreground Ctrl-C stops them (a second Ctrl-C kills them)
  down                                   stop the cluster gracefully (SIGTERM, then SIGKILL after a grace period)
  status [--json] [--watch]              each voter's state, health, role, term, commit and applied index and
                                         admission usage (used/limit); --watch redraws it every second
  logs [voterN] [--follow] [--raw]       the voters' logs without health probes and the AppHost's own polls
                                         (--raw: the JSON lines as written);
       [--tail N] [--since DURATION]     the last N lines, the lines of the last 30s, 5m, 1h, 2d...
  admission [voterN] [--json]            each voter's admission limits and usage, disk and storage limits
                                         (--json: the voters' own answers)
  start|stop|kill|restart voterN         local cluster debugging
  pause|resume voterN                    SIGSTOP / SIGCONT one voter
  transfer-leader voterN                 hand leadership to voterN, once it has taken over
  partition voterA,voterB voterC         cut the peer traffic between the groups (a voter in no group is
                                         cut off alone); root and iptables only
  heal                                   remove the partition (down removes it too)
  replace voterN                         replace a voter whose data is lost (or suspect): remove it from the
                                         configuration, empty its data dir, start it as a new member, add it
                                         as a learner and promote it once it has caught up
  publish --target compose|kubernetes    write a deployment of the three voters to DIR: compose.yaml or
          --out DIR [--build]            kubernetes/*.yaml, the voter image's build context (image/,
          [--image NAME:TAG]             FROM scratch) and build-image.sh, and secrets/ (docs/publish.md);
          [--http-port N] [--peer-port N]  --build also builds the image (default keyload-voter:VERSION);
                                         the ports are voter1's (compose: voterN's are N - 1 above)

Options:
  --state-dir DIR        the cluster's state dir (default .keyload in the repository root)
  --fresh                wipe the state dir first
  --isolated             free ports instead of 7101-7103 (HTTP) and 7201-7203 (peer)
  --runtime KIND         process (default) or container
  --env-file FILE        the dotenv file to read (default .env in the repository root)
  --dashboard-port N     up: serve the dashboard on 127.0.0.1:N (default 18888, with --isolated a free
                         port; 0: no dashboard)
  --out DIR              publish: where to write (new, empty, or an earlier publish's output)
  -h, --help             this text

A voter may be named \`leader\`: the voter that leads when the command runs.

Configuration: every KeyLoad__Section__Property variable (from the environment, or the .env file, which
the environment overrides) goes to all voters; AppHost__Voters__voterN__KeyLoad__Section__Property goes
to voterN alone, over the shared value.`;

export type CommandName =
  | "up"
  | "down"
  | "status"
  | "logs"
  | "admission"
  | "transfer-leader"
  | "partition"
  | "heal"
  | "publish"
  | "help"
  | VoterOperation;

export interface CliOptions {
  readonly command: CommandName;
  readonly voter?: VoterTarget;
  /** `partition`'s groups of voters. */
  readonly groups?: readonly (readonly VoterTarget[])[];
  readonly stateDir: string;
  readonly envFile: string;
  readonly runtime: RuntimeKind;
  readonly fresh: boolean;
  readonly isolated: boolean;
  readonly detach: boolean;
  readonly json: boolean;
  readonly follow: boolean;
  readonly raw: boolean;
  readonly watch: boolean;
  /** `logs --tail`: at most this many lines of what is there. */
  readonly tail?: number;
  /** `logs --since`: only lines written in this many milliseconds before the command ran. */
  readonly sinceMs?: number;
  /** `up --dashboard-port`, when given (dashboard-port.ts). */
  readonly dashboardPort?: number;
  /** `publish`'s request: set for that command only. */
  readonly publish?: PublishRequest;
}

const OPTIONS = {
  "state-dir": { type: "string" },
  "env-file": { type: "string" },
  runtime: { type: "string", default: APPHOST_DEFAULTS.runtime },
  fresh: { type: "boolean", default: false },
  isolated: { type: "boolean", default: false },
  detach: { type: "boolean", default: false },
  json: { type: "boolean", default: false },
  follow: { type: "boolean", default: false },
  raw: { type: "boolean", default: false },
  watch: { type: "boolean", default: false },
  tail: { type: "string" },
  since: { type: "string" },
  "dashboard-port": { type: "string" },
  target: { type: "string" },
  out: { type: "string" },
  build: { type: "boolean", default: false },
  image: { type: "string" },
  "http-port": { type: "string" },
  "peer-port": { type: "string" },
  help: { type: "boolean", short: "h", default: false },
} as const;

type OptionName = keyof typeof OPTIONS;

/** The options each command accepts beyond --state-dir, --runtime and --help, which all accept. */
const COMMAND_OPTIONS: Record<Exclude<CommandName, "help">, readonly OptionName[]> = {
  up: ["detach", "fresh", "isolated", "env-file", "dashboard-port"],
  down: [],
  status: ["json", "watch"],
  logs: ["follow", "raw", "tail", "since"],
  admission: ["json"],
  "transfer-leader": [],
  partition: [],
  heal: [],
  publish: ["target", "out", "build", "image", "env-file", "http-port", "peer-port"],
  start: [],
  stop: [],
  kill: [],
  restart: [],
  pause: [],
  resume: [],
  replace: [],
};
const COMMON: readonly OptionName[] = ["state-dir", "runtime", "help"];

function isCommand(value: string): value is Exclude<CommandName, "help"> {
  return Object.hasOwn(COMMAND_OPTIONS, value);
}

/** Parses the command line; relative paths are taken from `cwd`. Throws UsageError. */
export function parseCli(argv: readonly string[], cwd: string = process.cwd()): CliOptions {
  const parsed = (() => {
    try {
      return parseArgs({
        args: [...argv],
        options: OPTIONS,
        allowPositionals: true,
        strict: true,
        tokens: true,
      });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  })();
  const { values, positionals, tokens } = parsed;
  for (const option of ["state-dir", "env-file"] as const) {
    // An unset shell variable (`--state-dir "$DIR"`) must not fall back to the default cluster.
    if (values[option] === "") throw new UsageError(`--${option} needs a path, not an empty one`);
  }
  const envFile = values["env-file"];
  // The default .env may be absent; a file named on the command line must be there.
  if (envFile !== undefined && !existsSync(resolve(cwd, envFile))) {
    throw new UsageError(`--env-file ${envFile} does not exist`);
  }
  const [name, ...rest] = positionals;
  const base = {
    stateDir: values["state-dir"]
      ? resolve(cwd, values["state-dir"])
      : join(REPO_ROOT, APPHOST_DEFAULTS.stateDirName),
    envFile: values["env-file"]
      ? resolve(cwd, values["env-file"])
      : join(REPO_ROOT, APPHOST_DEFAULTS.envFileName),
    runtime: parseRuntimeKind(values.runtime),
    fresh: values.fresh,
    isolated: values.isolated,
    detach: values.detach,
    json: values.json,
    follow: values.follow,
    raw: values.raw,
    watch: values.watch,
    ...(values.tail === undefined ? {} : { tail: parseCount("tail", values.tail) }),
    ...(values.since === undefined ? {} : { sinceMs: parseDuration("since", values.since) }),
    ...(values["dashboard-port"] === undefined
      ? {}
      : { dashboardPort: parseDashboardPort(values["dashboard-port"]) }),
  };
  if (values.help || name === undefined || name === "help") return { ...base, command: "help" };
  if (!isCommand(name)) throw new UsageError(`unknown command ${JSON.stringify(name)}`);

  const allowed = new Set([...COMMON, ...COMMAND_OPTIONS[name]]);
  for (const option of Object.keys(OPTIONS) as OptionName[]) {
    const given = tokens.some((t) => t.kind === "option" && t.name === option);
    if (given && !allowed.has(option)) throw new UsageError(`${name} does not take --${option}`);
  }

  if (name === "status" && values.watch && values.json) {
    throw new UsageError("status --watch redraws a table; --json prints once");
  }
  if (name === "partition") return { ...base, command: name, groups: parseGroups(rest) };
  if (name === "publish") {
    if (rest.length > 0) throw new UsageError(`publish takes no arguments, but got ${rest.join(" ")}`);
    return { ...base, command: name, publish: parsePublish(values, cwd) };
  }
  const needsVoter = name === "transfer-leader" || (VOTER_OPERATIONS as readonly string[]).includes(name);
  const mayTakeVoter = name === "logs" || name === "admission";
  if (needsVoter && rest.length !== 1)
    throw new UsageError(`${name} needs exactly one voter, e.g. ${name} voter1`);
  if (mayTakeVoter && rest.length > 1) throw new UsageError(`${name} takes at most one voter`);
  if (!needsVoter && !mayTakeVoter && rest.length > 0) {
    throw new UsageError(`${name} takes no arguments, but got ${rest.join(" ")}`);
  }
  const voter = rest[0] === undefined ? undefined : parseVoterTarget(rest[0]);
  return voter === undefined ? { ...base, command: name } : { ...base, command: name, voter };
}

/** voter1's port for publish; compose gives voter3 two above it, so that must be a port too. */
function parsePublishPort(option: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const port = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(port) || port < 1 || port > 65_533) {
    throw new UsageError(`--${option} takes a port from 1 to 65533 (voter1's), not ${JSON.stringify(text)}`);
  }
  return port;
}

function parsePublish(
  values: {
    target?: string;
    out?: string;
    build: boolean;
    image?: string;
    "http-port"?: string;
    "peer-port"?: string;
  },
  cwd: string,
): PublishRequest {
  const { target, out } = values;
  if (target === undefined) throw new UsageError(`publish needs --target ${PUBLISH_TARGETS.join("|")}`);
  if (!isPublishTarget(target)) {
    throw new UsageError(`--target takes ${PUBLISH_TARGETS.join(" or ")}, not ${JSON.stringify(target)}`);
  }
  if (out === undefined || out === "") throw new UsageError("publish needs --out DIR, the dir to write to");
  const image = values.image ?? defaultImageName();
  // Docker's reference grammar, loosely: [registry[:port]/]name[:tag], lower case.
  if (!/^[a-z0-9]([a-z0-9._/:-]*[a-z0-9_])?(:[\w][\w.-]{0,127})?$/.test(image)) {
    throw new UsageError(
      `--image takes an image reference such as keyload-voter:1.0, not ${JSON.stringify(image)}`,
    );
  }
  const ports = {
    httpPort: parsePublishPort("http-port", values["http-port"], DEFAULT_PUBLISH_PORTS.httpPort),
    peerPort: parsePublishPort("peer-port", values["peer-port"], DEFAULT_PUBLISH_PORTS.peerPort),
  };
  if (Math.abs(ports.httpPort - ports.peerPort) < 3) {
    throw new UsageError(
      "--http-port and --peer-port overlap: compose gives each of the three voters one of each",
    );
  }
  return { target, outDir: resolve(cwd, out), build: values.build, image, ports };
}
