import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { bootstrapIdFor } from "./bootstrap-decision.js";
import { DirectoryRecord } from "./bootstrap-record.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function setup() {
  const root = mkdtempSync(join(tmpdir(), "keyload-decision-"));
  dirs.push(root);
  const record = new DirectoryRecord(join(root, "bootstrap"));
  const lines: string[] = [];
  const inputs = (voter: string, validate: (id: string) => void = () => {}) => ({
    record,
    voter,
    dataDir: join(root, voter),
    validate,
    log: (line: string) => lines.push(line),
  });
  /** What the voter writes once it has opened its storage (member-identity.ts). */
  const holdData = (voter: string) => {
    mkdirSync(join(root, voter, "raft"), { recursive: true });
    writeFileSync(join(root, voter, "raft", "member.json"), "{}");
  };
  return { root, record, inputs, holdData, lines };
}

describe("whether a published voter bootstraps", () => {
  it("every voter's first start bootstraps one cluster; a restart with data does not", async () => {
    const { inputs, holdData } = setup();
    const ids = await Promise.all(["voter1", "voter2", "voter3"].map((v) => bootstrapIdFor(inputs(v))));
    expect(ids[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(ids).size).toBe(1);
    holdData("voter1");
    expect(await bootstrapIdFor(inputs("voter1"))).toBeNull();
  });

  it("a voter that has started before and lost its data joins as a new member", async () => {
    const { inputs, lines } = setup();
    expect(await bootstrapIdFor(inputs("voter2"))).not.toBeNull();
    // Its volume is gone: the record remembers it started.
    expect(await bootstrapIdFor(inputs("voter2"))).toBeNull();
    expect(lines.at(-1)).toMatch(/voter2 has started before .* joins as a new member/);
  });

  it("a configuration the voter refuses costs no bootstrap: nothing is recorded", async () => {
    const { inputs } = setup();
    const refuse = () => {
      throw Object.assign(new Error("KeyLoad:Raft:ElectionTimeoutMs: must be..."), {
        code: "KeyLoadInvalidConfiguration",
      });
    };
    await expect(bootstrapIdFor(inputs("voter3", refuse))).rejects.toThrow(/ElectionTimeoutMs/);
    expect(await bootstrapIdFor(inputs("voter3"))).not.toBeNull();
  });

  it("a voter holding data brings a lost record up to date without waiting on it", async () => {
    const { inputs, holdData, record } = setup();
    holdData("voter1");
    expect(await bootstrapIdFor(inputs("voter1"))).toBeNull();
    await vi.waitFor(async () => expect((await record.read("voter1")).started).toBe(true));
  });
});
