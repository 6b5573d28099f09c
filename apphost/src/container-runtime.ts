import { execa, type ResultPromise } from "execa";
import type { AppModel } from "./app-model.js";
import { ContainerEngineError } from "./apphost-errors.js";
import { assertEngine, docker, ensureVoterImage, removeContainers } from "./container-engine.js";
import { recordOf } from "./process-table.js";
import { voterNodeArgs } from "./voter-build.js";
import {
  exitOf,
  noteContainerStart,
  STATE_DIR_LABEL,
  VOTER_IMAGE,
  type VoterMount,
  voterContainerSpec,
} from "./voter-container-spec.js";
import type { VoterExit, VoterLaunch, VoterProcess, VoterRuntime } from "./voter-runtime.js";

/** A `--mount` value; docker reads it as CSV, so a path holding a comma or a quote is quoted. */
function mountArgument({ path, readOnly }: VoterMount): string {
  const field = (text: string): string => (/[",]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);
  return [
    "type=bind",
    field(`source=${path}`),
    field(`target=${path}`),
    ...(readOnly ? ["readonly"] : []),
  ].join(",");
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
 * The CLI's `container` runtime: each voter in a container of a local Docker engine (the container
 * voter-container-spec.ts describes), run with the `docker` command line. A detached cluster's
 * containers outlive the command that started them; later commands find them by their labels.
 */
export const containerRuntime: VoterRuntime = {
  kind: "container",

  async start(launch: VoterLaunch): Promise<VoterProcess> {
    await assertEngine();
    await ensureVoterImage();
    const spec = voterContainerSpec(launch, await voterNodeArgs());
    // A container of an earlier run that the engine has not removed yet would hold the name.
    await removeContainers([spec.name]);
    const logOffset = noteContainerStart(launch, spec.name);
    const run = await docker(
      [
        "run",
        "--detach",
        "--rm",
        "--name",
        spec.name,
        ...Object.entries(spec.labels).flatMap(([name, value]) => ["--label", `${name}=${value}`]),
        "--network",
        "host",
        "--pid",
        "host",
        "--user",
        spec.user,
        "--tmpfs",
        spec.tmpfs,
        "--workdir",
        spec.workingDir,
        ...spec.mounts.flatMap((mount) => ["--mount", mountArgument(mount)]),
        // Names only: the values (the cluster secret among them) travel in docker's environment, not
        // on a command line every user of the machine can read.
        ...Object.keys(spec.env).flatMap((n) => ["--env", n]),
        VOTER_IMAGE,
        ...spec.command,
      ],
      { env: { ...spec.env } },
    );
    if (run.exitCode !== 0) {
      const exited = Promise.resolve<VoterExit>({ code: null, signal: null, spawnError: run.stderr });
      return { pid: 0, startTicks: null, logOffset, exited };
    }
    const id = run.stdout;
    const exited = waitForContainer(id, launch.supervised);
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
