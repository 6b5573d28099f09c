import {
  dumpLogsOnFailure,
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
 */
export function clusterPerTest(): (options?: StartClusterOptions) => Promise<TestCluster> {
  let cluster: TestCluster | undefined;
  afterEach(async (context) => {
    const current = cluster;
    cluster = undefined;
    if (current === undefined) return;
    try {
      // A test that failed already has its reason; the check would only add noise to it.
      if (context.task.result?.state !== "fail") await waitForIdleAdmission(current);
    } finally {
      await current.dispose();
    }
  });
  return async (options) => {
    const started = await startCluster(options);
    cluster = started;
    dumpLogsOnFailure({ onTestFailed }, started);
    return started;
  };
}
