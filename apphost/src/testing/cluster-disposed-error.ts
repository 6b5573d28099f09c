import { AppHostError } from "../apphost-errors.js";

/**
 * A fault or lifecycle method of a TestCluster was called once its dispose had begun: a test body that
 * outlived its timeout must not respawn voters or add iptables rules after the cleanup ran.
 */
export class ClusterDisposedError extends AppHostError {
  readonly code = "AppHostClusterDisposed";

  constructor(readonly action: string) {
    super(`the test cluster is disposed: ${action} refused (nothing was started, signalled or cut)`);
  }
}
