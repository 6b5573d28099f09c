import { httpUrlOf } from "./app-model.js";
import { recordOf } from "./process-table.js";
import { ensureVoterImage, removeContainers, testcontainersEngine } from "./testcontainers-engine.js";
import { voterNodeArgs } from "./voter-build.js";
import {
  noteContainerStart,
  STATE_DIR_LABEL,
  VOTER_LABEL,
  voterContainerSpec,
} from "./voter-container-spec.js";
import type { VoterExit, VoterProcess, VoterRuntime } from "./voter-runtime.js";

const UNKNOWN_EXIT: VoterExit = { code: null, signal: null };

/**
 * The testing API's `container` runtime: each voter in a container that testcontainers starts on the
 * engine it finds (the container voter-container-spec.ts describes, as the CLI's), returned once the
 * voter answers on the health route `waitFor` names. The containers belong to the test process: the
 * engine removes each when its voter exits, and a supervised voter exits with the test process, so
 * no reaper is needed.
 */
export const testcontainersRuntime: VoterRuntime = {
  kind: "container",

  async start(launch): Promise<VoterProcess> {
    const client = await testcontainersEngine();
    await ensureVoterImage(client);
    // Loaded once the engine is, after testcontainers' settings (testcontainers-engine.ts).
    const { VoterContainer } = await import("./voter-container.js");
    const { voter, stateDir } = launch;
    const spec = voterContainerSpec(launch, await voterNodeArgs());
    const labels = [`${STATE_DIR_LABEL}=${stateDir}`, `${VOTER_LABEL}=${voter.name}`];
    // A container of this voter that the engine has not finished removing would hold the name.
    await removeContainers(client, labels);
    const logOffset = noteContainerStart(launch, spec.name);
    const container = new VoterContainer(client, spec, voter.name, httpUrlOf(voter), launch.waitFor);
    try {
      const started = await container.start();
      const inspect = await client.container
        .getById(started.getId())
        .inspect()
        .catch(() => undefined);
      // Gone already (pid 0, or removed): `exited` tells how it ended.
      const pid = inspect?.State.Pid ?? 0;
      const exited = container.exited ?? Promise.resolve(UNKNOWN_EXIT);
      return { ...(pid > 0 ? recordOf(pid) : { pid: 0, startTicks: null }), logOffset, exited };
    } catch (err) {
      // A container that was created but did not start, or did not answer in time, is not kept: its
      // voter counts as never started.
      await removeContainers(client, labels);
      const spawnError = (err as Error).message;
      const gone = container.exited ?? Promise.resolve(UNKNOWN_EXIT);
      const exited = gone.then((): VoterExit => ({ ...UNKNOWN_EXIT, spawnError }));
      return { pid: 0, startTicks: null, logOffset, exited };
    }
  },

  async removeLeftovers(model): Promise<void> {
    const client = await testcontainersEngine();
    await removeContainers(client, [`${STATE_DIR_LABEL}=${model.stateDir}`]);
  },
};
