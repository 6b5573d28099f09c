import { partitionUnavailableReason } from "@keyload/apphost/testing";

/**
 * Why network faults cannot be made here (they need root and iptables), for a test to skip on, or
 * undefined when they can. Where `KEYLOAD_REQUIRE_PARTITIONS=1` (CI, as root) a missing capability
 * throws instead: there a skipped partition test would hide a broken setup.
 */
export async function partitionsUnavailable(): Promise<string | undefined> {
  const reason = await partitionUnavailableReason();
  if (reason !== undefined && process.env.KEYLOAD_REQUIRE_PARTITIONS === "1") {
    throw new Error(`KEYLOAD_REQUIRE_PARTITIONS=1, but ${reason}`);
  }
  return reason;
}
