import type { TestCluster } from "@keyload/apphost/testing";
import type { AdmissionStatus } from "@keyload/client";

/**
 * What a voter's admission status shows when nothing is in flight but the status request itself: no
 * command reserved in either lane, no HTTP request but the status read's own data-pool slot, and no
 * verified scope but that request's (the bootstrap admin). The contract's idle node (section 7).
 */
export function idleAdmission(status: AdmissionStatus): AdmissionStatus {
  const own = status.httpAdmission.limits.dataRequestBytes + 4096;
  return {
    ...status,
    commandAdmission: {
      ...status.commandAdmission,
      data: { commands: 0, retainedBytes: 0, queued: 0, active: 0 },
      control: { commands: 0, retainedBytes: 0, queued: 0, active: 0 },
      verifiedScopes: [],
    },
    httpAdmission: {
      ...status.httpAdmission,
      data: { requests: 1, modeledBytes: own },
      control: { requests: 0, modeledBytes: 0 },
      ingress: { data: 0, control: 0 },
      verifiedScopes: [
        { pool: "data", tenantId: "system", principalId: "admin", tenantRequests: 1, principalRequests: 1 },
      ],
    },
  };
}

/**
 * Waits until every running voter's admission status is back to idle (releases follow the answers
 * they belong to by a moment), and throws with the last status seen by each voter that never got
 * there. Every reservation must come back: one that does not is a leak.
 */
export async function waitForIdleAdmission(cluster: TestCluster, timeoutMs = 15_000): Promise<void> {
  const admin = cluster.client(cluster.adminKey, { maxAttempts: 1, adaptiveThrottle: false });
  const deadline = Date.now() + timeoutMs;
  const running = cluster.voters.filter((v) => v.pid !== null);
  const busy = new Map<string, unknown>();
  for (const voter of running) {
    for (;;) {
      let last: unknown;
      try {
        const status = await admin.admissionStatus({ endpoint: voter.httpUrl });
        if (JSON.stringify(status) === JSON.stringify(idleAdmission(status))) break;
        last = status;
      } catch (error) {
        // The status is a quorum read: a voter catching up may not answer it yet.
        last = error instanceof Error ? `${error.name}: ${error.message}` : error;
      }
      if (Date.now() >= deadline) {
        busy.set(voter.name, last);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  if (busy.size > 0) {
    throw new Error(
      `admission did not return to idle on ${[...busy.keys()].join(", ")}: ${JSON.stringify(Object.fromEntries(busy), null, 2)}`,
    );
  }
}
