import { SeededRandom } from "../../raft/index.js";
import { NodeRegistry } from "../node-registry.js";
import type { DiskFaults } from "../sim-disk.js";

/** Disks that sync in one step and never stall: the pieces' tests decide their own faults. */
export const STEADY_DISK: DiskFaults = { minSyncDelay: 1, maxSyncDelay: 1, stallRate: 0, stallDelay: 0 };

/**
 * A registry with fixed seeds and a 10-tick clock without skew, as the simulator's pieces are tested on;
 * its disks are lazy (LazySnapshotStorage) with chance `lazySnapshots`.
 */
export function testNodeRegistry(disk: DiskFaults = STEADY_DISK, lazySnapshots = 0): NodeRegistry {
  return new NodeRegistry({
    diskSeeds: new SeededRandom(1),
    clock: new SeededRandom(2),
    stateLoss: new SeededRandom(3),
    tickInterval: 10,
    tickSkew: 0,
    disk,
    lazySnapshots: { chance: lazySnapshots, random: new SeededRandom(4) },
  });
}
