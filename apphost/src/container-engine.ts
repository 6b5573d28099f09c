import { execa } from "execa";
import { ContainerEngineError, ContainerRuntimeUnavailableError } from "./apphost-errors.js";
import { VOTER_IMAGE, voterImageArchive } from "./voter-container-spec.js";

/**
 * The Docker engine, driven through the `docker` command line (which honours DOCKER_HOST and the
 * user's contexts, as a person debugging the cluster would expect).
 */

/** How long the engine may take to remove a stopped container. */
const REMOVAL_TIMEOUT_MS = 10_000;

export interface DockerResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

export async function docker(
  args: readonly string[],
  options: { env?: Record<string, string>; input?: Buffer } = {},
): Promise<DockerResult> {
  const result = await execa("docker", args, {
    reject: false,
    stdin: options.input === undefined ? "ignore" : "pipe",
    ...(options.input === undefined ? {} : { input: options.input }),
    ...(options.env === undefined ? {} : { env: options.env }),
  });
  if (result.exitCode === undefined) {
    // Not even started: there is no docker command line on this machine.
    throw new ContainerRuntimeUnavailableError(result.shortMessage ?? "the docker command could not be run");
  }
  return { exitCode: result.exitCode, stdout: result.stdout.trim(), stderr: result.stderr.trim() };
}

/** Why no Docker engine can be used here, or undefined when one answers. */
export async function engineUnavailableReason(): Promise<string | undefined> {
  try {
    await assertEngine();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

let engineChecked: Promise<void> | undefined;

/** Throws ContainerRuntimeUnavailableError, saying why, unless a Docker engine answers. */
export function assertEngine(): Promise<void> {
  engineChecked ??= (async () => {
    const info = await docker(["version", "--format", "{{.Server.Version}}"]);
    if (info.exitCode !== 0) {
      engineChecked = undefined;
      throw new ContainerRuntimeUnavailableError(info.stderr || info.stdout);
    }
  })();
  return engineChecked;
}

let imageReady: Promise<void> | undefined;

/** Builds the voters' image from its skeleton with `docker import`, once per engine. */
export function ensureVoterImage(): Promise<void> {
  imageReady ??= (async () => {
    try {
      if ((await docker(["image", "inspect", VOTER_IMAGE])).exitCode === 0) return;
      const imported = await docker(["import", "-", VOTER_IMAGE], { input: await voterImageArchive() });
      if (imported.exitCode !== 0) {
        throw new ContainerRuntimeUnavailableError(`docker import failed: ${imported.stderr}`);
      }
    } catch (err) {
      imageReady = undefined;
      throw err;
    }
  })();
  return imageReady;
}

/**
 * Removes containers by name or id and waits until they are gone. One the engine is already removing
 * (a voter that exited with `--rm`) is waited for, so nothing remains when this returns.
 */
export async function removeContainers(names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  const removed = await docker(["rm", "--force", ...names]);
  const failures = removed.stderr
    .split("\n")
    .filter((line) => line !== "" && !/No such container|already in progress/i.test(line));
  if (removed.exitCode !== 0 && failures.length > 0) {
    throw new ContainerEngineError(`docker rm ${names.join(" ")} failed: ${failures.join("; ")}`);
  }
  const deadline = Date.now() + REMOVAL_TIMEOUT_MS;
  for (;;) {
    const left = await docker(["inspect", "--format", "{{.Id}}", ...names]);
    if (left.stdout === "") return;
    if (Date.now() >= deadline) {
      throw new ContainerEngineError(
        `the engine did not remove ${names.join(" ")} within ${REMOVAL_TIMEOUT_MS} ms`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
