import { describe, expect, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import type { Entry, HardState } from "../raft/types.js";
import { crashWorkload, type LogPosition } from "./test-fixtures/crash-workload.js";
import { runLogStoreCrashChild } from "./test-fixtures/log-store-crash-runner.js";
import { hs, storageFixture } from "./test-fixtures/storage-fixture.js";

const fx = storageFixture();
function sameLog(a: readonly Entry[], b: readonly Entry[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.index !== y.index || x.term !== y.term || x.type !== y.type) return false;
    if (Buffer.compare(Buffer.from(x.data), Buffer.from(y.data)) !== 0) return false;
  }
  return true;
}

function sameHardState(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

describe("crash recovery", () => {
  it("keeps every acknowledged write across SIGKILLs at random points, and stays consistent", async () => {
    const dir = fx.dir();
    const rng = new SeededRandom(7);
    let log: Entry[] = [];
    let hardState = hs(0, null, 0);
    let totalAcked = 0;
    for (let round = 0; round < 14; round++) {
      const seed = 100 + round;
      const from: LogPosition = { lastIndex: log.length, hardState };
      const early = round % 4 === 3;
      const run = await runLogStoreCrashChild(["append", dir, String(seed)], {
        early,
        afterMs: early ? rng.nextInt(400) : 20 + rng.nextInt(250),
      });
      totalAcked += run.acked;

      // Opening runs the whole recovery check; any damage would throw here.
      const store = fx.open(dir);
      const actual = store.entries(1, store.lastIndex() + 1, Number.POSITIVE_INFINITY);
      const actualHs = store.initialState().hardState;
      await store.close();

      // The recovered log must be the one left by the first k writes, for some k >= the acknowledged count.
      const model = [...log];
      let modelHs = hardState;
      const writes = crashWorkload(seed, from);
      let matched = -1;
      for (let k = 0; k <= run.acked + 8; k++) {
        if (k > 0) {
          const w = writes.next().value;
          model.length = w.entries[0]!.index - 1;
          model.push(...w.entries);
          modelHs = w.hardState!;
        }
        if (k >= run.acked && sameHardState(modelHs, actualHs) && sameLog(model, actual)) {
          matched = k;
          break;
        }
      }
      expect(matched, `round ${round}: ${run.acked} writes acknowledged`).toBeGreaterThanOrEqual(run.acked);
      log = [...actual];
      hardState = actualHs;
    }
    expect(totalAcked).toBeGreaterThan(20);
  }, 60_000);
});
