import { describe, expect, it } from "vitest";
import { entries, hs, storageFixture } from "../storage/test-fixtures/storage-fixture.js";
import { raiseCommitToApplied } from "./raise-commit.js";

const fx = storageFixture();

describe("raiseCommitToApplied", () => {
  it("raises a commit index a crash left below the applied index, durably, keeping term and vote", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir);
    await w.write({ snapshot: null, entries: entries(1, 5, 2), hardState: hs(2, "n2", 1) });
    expect(await raiseCommitToApplied(w, 4)).toBe(true);
    await w.close();
    expect(fx.open(dir).initialState().hardState).toEqual(hs(2, "n2", 4));
  });

  it("leaves a commit index at or above the applied index alone", async () => {
    const w = fx.openWriter(fx.dir());
    await w.write({ snapshot: null, entries: entries(1, 5, 2), hardState: hs(2, "n2", 3) });
    expect(await raiseCommitToApplied(w, 3)).toBe(false);
    expect(await raiseCommitToApplied(w, 2)).toBe(false);
    expect(w.store.initialState().hardState).toEqual(hs(2, "n2", 3));
  });

  it("never claims entries the log does not hold", async () => {
    const w = fx.openWriter(fx.dir());
    await w.write({ snapshot: null, entries: entries(1, 5, 2), hardState: hs(2, "n2", 3) });
    expect(await raiseCommitToApplied(w, 6)).toBe(false);
    expect(w.store.initialState().hardState.commit).toBe(3);
  });
});
