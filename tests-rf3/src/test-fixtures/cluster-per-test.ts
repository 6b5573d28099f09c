import {
  containerRuntimeUnavailableReason,
  dumpLogsOnFailure,
  RUNTIME_KINDS,
  type RuntimeKind,
  type StartClusterOptions,
  startCluster,
  type TestCluster,
} from "@keyload/apphost/testing";
import { afterEach, onTestFailed } from "vitest";
import { waitForIdleAdmission } from "./admission-idle.js";

/**
 * One real three-voter cluster per test, started through the AppHost's testing API. Call at a test
 * file's top level, then `await startCluster(options)` inside a test. After every test, whatever it
 * did, each running voter's admission must come back to idle (no reservation leaked by anything the
 * test did), and the cluster is disposed: voters killed, partitions healed, state dir removed. A test
 * that fails prints each voter's last log lines.
 *
 * The voters run as processes unless `KEYLOAD_RF3_RUNTIME=container` (the container subset of the
 * suite) or the test asks for a runtime itself.
 */
export function clusterPerTest(): (options?: StartClusterOptions) => Promise<TestCluster> {
  // The start in progress too: a test that times out while its cluster starts must not leave it behind.
  let starting: Promise<TestCluster> | undefined;
  afterEach(async (context) => {
    const pending = starting;
    starting = undefined;
    if (pending === undefined) return;
    const current = await pending.catch(() => undefined);
    if (current === undefined) return;
    try {
      // A test that failed already has its reason; the check would only add noise to it.
      if (context.task.result?.state !== "fail") await waitForIdleAdmission(current);
    } finally {
      await current.dispose();
    }
  });
  return async (options) => {
    const runtime = options?.runtime ?? defaultRuntime();
    if (runtime === "container") {
      // Asked for by name, so a missing engine fails the test rather than skipping it.
      const reason = await containerRuntimeUnavailableReason();
      if (reason !== undefined) throw new Error(`the container runtime is unavailable: ${reason}`);
    }
    starting = startCluster({ ...options, runtime });
    const started = await starting;
    dumpLogsOnFailure({ onTestFailed }, started);
    return started;
  };
}

function defaultRuntime(): RuntimeKind {
  const named = process.env.KEYLOAD_RF3_RUNTIME ?? "process";
  const kind = RUNTIME_KINDS.find((k) => k === named);
  if (kind === undefined) {
    throw new Error(`KEYLOAD_RF3_RUNTIME must be one of ${RUNTIME_KINDS.join(", ")}, not ${named}`);
  }
  return kind;
}
