import { type ContainerRuntimeClient, GenericContainer } from "testcontainers";
import { exitOf, VOTER_IMAGE, type VoterContainerSpec } from "./voter-container-spec.js";
import { VoterHealthWaitStrategy } from "./voter-health-wait-strategy.js";
import type { VoterExit, VoterLaunch } from "./voter-runtime.js";

/** The image is made locally (testcontainers-engine.ts): nothing is ever pulled. */
const NEVER_PULL = { shouldPull: () => false };

/**
 * One voter's container, as testcontainers starts it: the container voter-container-spec.ts describes,
 * started once the voter answers on the health route `waitFor` names. What testcontainers' typed API
 * lacks (the host's pid namespace, removal by the engine on exit, mounts) goes to the engine's host
 * config directly.
 */
export class VoterContainer extends GenericContainer {
  #exited: Promise<VoterExit> | undefined;

  constructor(
    private readonly engine: ContainerRuntimeClient,
    spec: VoterContainerSpec,
    voter: string,
    httpUrl: string,
    waitFor: VoterLaunch["waitFor"],
  ) {
    super(VOTER_IMAGE);
    this.withName(spec.name)
      .withLabels({ ...spec.labels })
      .withNetworkMode("host")
      .withUser(spec.user)
      .withWorkingDir(spec.workingDir)
      .withTmpFs({ [spec.tmpfs]: "" })
      .withEnvironment({ ...spec.env })
      .withCommand([...spec.command])
      .withPullPolicy(NEVER_PULL)
      // No reaper: the engine removes the container when the voter exits, and a supervised voter
      // exits with the test process however that ends.
      .withAutoCleanup(false)
      .withWaitStrategy(
        new VoterHealthWaitStrategy(voter, httpUrl, waitFor.health).withStartupTimeout(waitFor.timeoutMs),
      );
    this.hostConfig.PidMode = "host";
    this.hostConfig.AutoRemove = true;
    // Mounts rather than withBindMounts, whose `source:target:mode` strings break on a path with a colon.
    this.hostConfig.Mounts = spec.mounts.map(({ path, readOnly }) => ({
      Type: "bind",
      Source: path,
      Target: path,
      ReadOnly: readOnly,
    }));
  }

  /** Settles once the voter has exited and the engine has removed its container; undefined until created. */
  get exited(): Promise<VoterExit> | undefined {
    return this.#exited;
  }

  protected override async containerCreated(containerId: string): Promise<void> {
    // Asked before the container starts, as `docker run --rm` does, so a voter that exits at once
    // still reports how; a wait the engine refuses (the container is gone already) loses the status.
    this.#exited = this.engine.container
      .getById(containerId)
      .wait({ condition: "removed" })
      .then(
        (result: unknown): VoterExit => {
          const status = (result as { StatusCode?: unknown } | null)?.StatusCode;
          return typeof status === "number" ? exitOf(status) : { code: null, signal: null };
        },
        (): VoterExit => ({ code: null, signal: null }),
      );
  }
}
