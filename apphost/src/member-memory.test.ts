import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { recallMembers, rememberMembers } from "./member-memory.js";

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("what status remembers of each voter's membership", () => {
  it("keeps what was seen, merged with what it kept, and recalls it", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-members-"));
    const file = join(dir, "members.json");
    expect(recallMembers(file)).toEqual(new Map());
    rememberMembers(
      file,
      new Map([
        ["voter1", "voter"],
        ["voter2", "learner"],
      ] as const),
    );
    rememberMembers(file, new Map([["voter2", "voter"]] as const));
    expect(recallMembers(file)).toEqual(
      new Map([
        ["voter1", "voter"],
        ["voter2", "voter"],
      ]),
    );
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ voter1: "voter", voter2: "voter" });
  });

  it("recalls nothing from a damaged record, and writes nowhere for a state dir that does not exist", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-members-"));
    const file = join(dir, "members.json");
    writeFileSync(file, "{not json");
    expect(recallMembers(file)).toEqual(new Map());
    writeFileSync(file, JSON.stringify({ voter1: "voter", voter2: "boss" }));
    expect(recallMembers(file)).toEqual(new Map([["voter1", "voter"]]));
    const missing = join(dir, "absent", "members.json");
    rememberMembers(missing, new Map([["voter1", "voter"]] as const));
    expect(recallMembers(missing)).toEqual(new Map());
  });
});
