import type { TestCluster, TestVoter } from "@keyload/apphost/testing";

/**
 * Waits until each of `voters` (every running voter by default) has applied everything committed so far,
 * by a quorum read through it: the admission status, under the bootstrap admin key every voter knows. A
 * voter authenticates a request against the principal catalog it has applied, so an API key created a
 * moment ago is refused (401) by a voter still behind the commit that created it.
 */
export async function passReadBarrier(
  cluster: TestCluster,
  voters: readonly TestVoter[] = cluster.voters.filter((v) => v.pid !== null),
): Promise<void> {
  const admin = cluster.client(cluster.adminKey, { adaptiveThrottle: false });
  for (const voter of voters) await admin.admissionStatus({ endpoint: voter.httpUrl });
}
