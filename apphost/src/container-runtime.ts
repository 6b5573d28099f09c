import { createHash } from "node:crypto";
import { mkdirSync, realpathSync } from "node:fs";
import { constants } from "node:os";
import { dirname, relative, sep } from "node:path";
import { execa, type ResultPromise } from "execa";
import type { AppModel, VoterName } from "./app-model.js";
import { ContainerEngineError } from "./apphost-errors.js";
import { assertEngine, docker, ensureVoterImage, removeContainers, VOTER_IMAGE } from "./container-engine.js";
import { recordOf } from "./process-table.js";
import { REPO_ROOT, VOTER_NODE_ARGS } from "./repo-layout.js";
import { supervisionEnvironment } from "./supervision.js";
import { appendNote, logSize } from "./voter-log-file.js";
import type { VoterExit, VoterLaunch, VoterProcess, VoterRuntime } from "./voter-runtime.js";

const STATE_DIR_LABEL = "io.keyload.state-dir";
const VOTER_LABEL = "io.keyload.voter";
const CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/** Runs the voter with its stdout and stderr appended to its log file, as the process runtime does. */
const LOG_WRAPPER = 'log="$1"; shift; exec "$@" >>"$log" 2>&1';

/** One name per voter and state dir, so two clusters side by side never touch each other's containers. */
export function containerNameOf(stateDir: string, voter: VoterName): string {
  const digest = createHash("sha256").update(stateDir).digest("hex").slice(0, 12);
  return `keyload-${digest}-${voter}`;
}

function isWithin(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !rel.startsWith(sep));
}

/** A `--mount` value; docker reads it as CSV, so a path holding a comma or a quote is quoted. */
function bindMount(path: string, readOnly: boolean): string {
  const field = (text: string): string => (/[",]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);
  return [
    "type=bind",
    field(`source=${path}`),
    field(`target=${path}`),
    ...(readOnly ? ["readonly"] : []),
  ].join(",");
}

/**
 * The host paths a voter's container sees, each at its own path: the system (Node.js, its libraries,
 * /etc for name resolution) and the repository read-only, the state dir (data dirs and logs) writable.
 */
function mountsFor(stateDir: string): string[] {
  const readOnly = ["/usr", "/etc", REPO_ROOT];
  // Node.js installed outside /usr (nvm, a tarball) is mounted from where it is.
  const nodePrefix = dirname(dirname(realpathSync(process.execPath)));
  if (!readOnly.some((dir) => isWithin(nodePrefix, dir))) readOnly.push(nodePrefix);
  return [
    ...readOnly.flatMap((path) => ["--mount", bindMount(path, true)]),
    "--mount",
    bindMount(stateDir, false),
  ];
}

function exitOf(code: number): VoterExit {
  // The engine reports a voter killed by a signal as 128 + the signal's number.
  const signal =
    code > 128 ? Object.entries(constants.signals).find(([, n]) => n === code - 128)?.[0] : undefined;
  return signal ? { code: null, signal } : { code, signal: null };
}

/** `docker wait` commands of this process, stopped when it exits so none outlives it. */
const waiters = new Set<ResultPromise>();
process.once("exit", () => {
  for (const waiter of waiters) waiter.kill();
});

function waitForContainer(id: string, supervised: boolean): Promise<VoterExit> {
  const waiter = execa("docker", ["wait", id], { reject: false, stdin: "ignore" });
  waiters.add(waiter);
  if (!supervised) {
    // A detached cluster's voters must not keep the command that started them waiting.
    waiter.unref();
    for (const stream of [waiter.stdout, waiter.stderr]) (stream as { unref?: () => void } | null)?.unref?.();
  }
  return waiter.then(
    (result): VoterExit => {
      waiters.delete(waiter);
      const code = Number.parseInt(result.stdout.trim(), 10);
      // A container that exited before the wait began is already removed; its status is lost.
      return result.exitCode === 0 && Number.isInteger(code) ? exitOf(code) : { code: null, signal: null };
    },
    (): VoterExit => ({ code: null, signal: null }),
  );
}

/**
 * The `container` runtime: each voter in a container of a local Docker engine, on the host's network
 * (so the voters' loopback addresses, ports and partitions are the same as for processes) and in the
 * host's pid namespace (so pause, kill, state and supervision work on the same pid as for processes).
 * Containers are removed when they exit.
 */
export const containerRuntime: VoterRuntime = {
  kind: "container",

  async start(launch: VoterLaunch): Promise<VoterProcess> {
    const { voter, supervised, stateDir } = launch;
    await assertEngine();
    await ensureVoterImage();
    const name = containerNameOf(stateDir, voter.name);
    // A container of an earlier run that the engine has not removed yet would hold the name.
    await removeContainers([name]);
    mkdirSync(voter.dataDir, { recursive: true });
    const logOffset = logSize(voter.logFile);
    appendNote(
      voter.logFile,
      voter.name,
      `starting ${voter.name} in container ${name}${supervised ? ` supervised by AppHost pid ${process.pid}` : " detached"}`,
    );
    const env: Record<string, string> = {
      PATH: CONTAINER_PATH,
      HOME: "/tmp",
      ...launch.env,
      ...(supervised ? supervisionEnvironment() : {}),
    };
    const uid = process.getuid?.() ?? 0;
    const gid = launch.gid ?? process.getgid?.() ?? 0;
    const run = await docker(
      [
        "run",
        "--detach",
        "--rm",
        "--name",
        name,
        "--label",
        `${STATE_DIR_LABEL}=${stateDir}`,
        "--label",
        `${VOTER_LABEL}=${voter.name}`,
        "--network",
        "host",
        "--pid",
        "host",
        "--user",
        `${uid}:${gid}`,
        "--tmpfs",
        "/tmp",
        "--workdir",
        REPO_ROOT,
        ...mountsFor(stateDir),
        // Names only: the values (the cluster secret among them) travel in docker's environment, not
        // on a command line every user of the machine can read.
        ...Object.keys(env).flatMap((n) => ["--env", n]),
        VOTER_IMAGE,
        "/bin/sh",
        "-c",
        LOG_WRAPPER,
        "keyload-voter",
        voter.logFile,
        realpathSync(process.execPath),
        ...VOTER_NODE_ARGS,
      ],
      { env },
    );
    if (run.exitCode !== 0) {
      const exited = Promise.resolve<VoterExit>({ code: null, signal: null, spawnError: run.stderr });
      return { pid: 0, startTicks: null, logOffset, exited };
    }
    const id = run.stdout;
    const exited = waitForContainer(id, supervised);
    const inspect = await docker(["inspect", "--format", "{{.State.Pid}}", id]);
    // Gone already (pid 0, or removed): `exited` tells how it ended.
    const pid = inspect.exitCode === 0 ? Number.parseInt(inspect.stdout, 10) || 0 : 0;
    return { ...(pid > 0 ? recordOf(pid) : { pid: 0, startTicks: null }), logOffset, exited };
  },

  async removeLeftovers(model: AppModel): Promise<void> {
    await assertEngine();
    const listed = await docker([
      "ps",
      "--all",
      "--quiet",
      "--filter",
      `label=${STATE_DIR_LABEL}=${model.stateDir}`,
    ]);
    if (listed.exitCode !== 0) throw new ContainerEngineError(`docker ps failed: ${listed.stderr}`);
    await removeContainers(listed.stdout.split("\n").filter((id) => id !== ""));
  },
};
