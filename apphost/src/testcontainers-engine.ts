import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import type { ContainerRuntimeClient } from "testcontainers";
import { ContainerEngineError, ContainerRuntimeUnavailableError } from "./apphost-errors.js";
import {
  VOTER_IMAGE,
  VOTER_IMAGE_REPOSITORY,
  VOTER_IMAGE_TAG,
  voterImageArchive,
} from "./voter-container-spec.js";

/**
 * The Docker engine as testcontainers finds it (DOCKER_HOST or `~/.testcontainers.properties`, else
 * the default socket), for the testing API's containers.
 *
 * testcontainers reads these when it loads and first connects, so they are set before it is imported,
 * unless the user set them. Its reaper, Ryuk, is an image of a registry the voters must never need;
 * a voter's container needs no reaper anyway (testcontainers-runtime.ts). The voters use the host's
 * network, so the engine's host is this machine's loopback; left to find it, testcontainers inspects
 * the engine's `bridge` network when it runs inside a container, and an engine started with
 * `--bridge=none` has none.
 */
const TESTCONTAINERS_DEFAULTS = {
  TESTCONTAINERS_RYUK_DISABLED: "true",
  TESTCONTAINERS_HOST_OVERRIDE: "127.0.0.1",
} as const;

/** How long the engine may take to remove a stopped container. */
const REMOVAL_TIMEOUT_MS = 10_000;

let engine: Promise<ContainerRuntimeClient> | undefined;

/** testcontainers' client of the engine; throws ContainerRuntimeUnavailableError when it finds none. */
export function testcontainersEngine(): Promise<ContainerRuntimeClient> {
  engine ??= (async () => {
    for (const [name, value] of Object.entries(TESTCONTAINERS_DEFAULTS)) process.env[name] ??= value;
    const { getContainerRuntimeClient } = await import("testcontainers");
    try {
      return await getContainerRuntimeClient();
    } catch (err) {
      engine = undefined;
      throw new ContainerRuntimeUnavailableError(
        `testcontainers: ${(err as Error).message}; DOCKER_HOST is ${process.env.DOCKER_HOST ?? "not set"}`,
      );
    }
  })();
  return engine;
}

/** Why the testing API cannot run containers here, or undefined when it can. */
export async function testcontainersUnavailableReason(): Promise<string | undefined> {
  try {
    await testcontainersEngine();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

let imageReady: Promise<void> | undefined;

/**
 * Imports the voters' image from its skeleton, once per engine. testcontainers pulls an image at every
 * start unless its client has seen it exist, which this makes sure of, so no start reaches a registry.
 */
export function ensureVoterImage(client: ContainerRuntimeClient): Promise<void> {
  imageReady ??= (async () => {
    const { ImageName } = await import("testcontainers");
    const image = ImageName.fromString(VOTER_IMAGE);
    try {
      if (await client.image.exists(image)) return;
      const progress = await client.container.dockerode.importImage(
        Readable.from([await voterImageArchive()]),
        { repo: VOTER_IMAGE_REPOSITORY, tag: VOTER_IMAGE_TAG },
      );
      const output = await text(progress);
      if (!(await client.image.exists(image))) {
        throw new ContainerRuntimeUnavailableError(`importing ${VOTER_IMAGE} failed: ${output}`);
      }
    } catch (err) {
      imageReady = undefined;
      throw err;
    }
  })();
  return imageReady;
}

function statusCodeOf(err: unknown): number | undefined {
  const status = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === "number" ? status : undefined;
}

/**
 * Removes every container that carries all of `labels` (`name=value`) and waits until they are gone.
 * One the engine is already removing (a voter that exited) is waited for, so nothing remains on return.
 */
export async function removeContainers(
  client: ContainerRuntimeClient,
  labels: readonly string[],
): Promise<void> {
  const { dockerode } = client.container;
  const list = () => dockerode.listContainers({ all: true, filters: { label: [...labels] } });
  await Promise.all(
    (await list()).map(async ({ Id }) => {
      try {
        await dockerode.getContainer(Id).remove({ force: true });
      } catch (err) {
        // 404: gone already; 409: the engine is removing it.
        const status = statusCodeOf(err);
        if (status !== 404 && status !== 409) {
          throw new ContainerEngineError(`removing container ${Id} failed: ${(err as Error).message}`);
        }
      }
    }),
  );
  const deadline = Date.now() + REMOVAL_TIMEOUT_MS;
  while ((await list()).length > 0) {
    if (Date.now() >= deadline) {
      throw new ContainerEngineError(
        `the engine did not remove the containers labelled ${labels.join(", ")} within ${REMOVAL_TIMEOUT_MS} ms`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
