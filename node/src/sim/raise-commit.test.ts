import { describe, expect, it } from "vitest";
import { MemoryStorage } from "../raft/memory-storage.js";
import { raiseCommitToApplied } from "./raise-commit.js";

function storage(last: number, commit: number): MemoryStorage {
  const s = new MemoryStorage({ voters: ["n1", "n2", "n3"] });
  const entries = [];
  for (let i = 1; i <= last; i++)
    entries.push({ term: 1, index: i, type: "normal" as const, data: new Uint8Array() });
  s.append(entries);
  s.setHardState({ term: 1, vote: "n1", commit });
  return s;
}

describe("raiseCommitToApplied", () => {
  it("raises a commit index a crash lost below what the state machine kept", () => {
    const s = storage(5, 2);
    expect(raiseCommitToApplied(s, 4)).toBe(true);
    expect(s.initialState().hardState).toEqual({ term: 1, vote: "n1", commit: 4 });
  });

  it("leaves a commit index at or above the applied one", () => {
    const s = storage(5, 4);
    expect(raiseCommitToApplied(s, 4)).toBe(false);
    expect(raiseCommitToApplied(s, 3)).toBe(false);
    expect(s.initialState().hardState.commit).toBe(4);
  });

  it("leaves an applied index beyond the log for the core to refuse", () => {
    const s = storage(5, 2);
    expect(raiseCommitToApplied(s, 6)).toBe(false);
    expect(s.initialState().hardState.commit).toBe(2);
  });
});
