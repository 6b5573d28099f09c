import { describe, expect, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import { SimStateMachine } from "./sim-state-machine.js";
import { StateMachineStore } from "./state-machine-store.js";

function applyBatch(store: StateMachineStore, from: number, to: number): void {
  for (let i = from; i <= to; i++)
    store.live.apply({ term: 1, index: i, type: "normal", data: new Uint8Array([i]) });
  store.committed();
}

describe("StateMachineStore", () => {
  it("comes back from a crash at a batch boundary, never before its last sync", () => {
    const seen = new Set<number>();
    for (let seed = 0; seed < 40; seed++) {
      const store = new StateMachineStore(new SeededRandom(seed));
      applyBatch(store, 1, 2);
      store.synced(store.live);
      applyBatch(store, 3, 3);
      applyBatch(store, 4, 6);
      expect(store.unsynced).toBe(2);
      const lost = store.crash();
      const applied = store.live.applied;
      seen.add(applied);
      expect([2, 3, 6]).toContain(applied);
      expect(lost).toBe({ 2: 2, 3: 1, 6: 0 }[applied]);
      expect(store.unsynced).toBe(0);
    }
    expect([...seen].sort()).toEqual([2, 3, 6]);
  });

  it("keeps the images it may come back to apart from the state applied after them", () => {
    let rolledBack = 0;
    for (let seed = 0; seed < 20; seed++) {
      const store = new StateMachineStore(new SeededRandom(seed));
      applyBatch(store, 1, 1);
      store.synced(store.live);
      const digest = store.live.digest;
      applyBatch(store, 2, 2);
      if (store.crash() === 0) continue;
      rolledBack++;
      expect(store.live.applied).toBe(1);
      expect(store.live.digest).toBe(digest);
    }
    expect(rolledBack).toBeGreaterThan(0);
  });

  it("takes an installed snapshot's state as durable", () => {
    const store = new StateMachineStore(new SeededRandom(2));
    applyBatch(store, 1, 3);
    const installed = SimStateMachine.empty();
    installed.apply({ term: 2, index: 1, type: "normal", data: new Uint8Array([9]) });
    store.synced(installed);
    expect(store.crash()).toBe(0);
    expect(store.live.digest).toBe(installed.digest);
    expect(store.live).not.toBe(installed);
  });
});
