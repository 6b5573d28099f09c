import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type AppModel, buildAppModel, defaultPorts, type VoterName } from "./app-model.js";
import { StateDirError } from "./apphost-errors.js";
import { bootstrapIdFor, recordBootstrapped } from "./cluster-bootstrap.js";

let stateDir: string | undefined;
afterEach(() => {
  if (stateDir !== undefined) rmSync(stateDir, { recursive: true, force: true });
  stateDir = undefined;
});

function model() {
  stateDir ??= mkdtempSync(`${tmpdir()}/keyload-bootstrap-`);
  return buildAppModel(stateDir, defaultPorts());
}

/** What a voter leaves in its data dir once it has bootstrapped (or joined): its member identity. */
function giveIdentity(m: AppModel, name: VoterName): void {
  const raftDir = join(m.voters.find((v) => v.name === name)!.dataDir, "raft");
  mkdirSync(raftDir, { recursive: true });
  writeFileSync(join(raftDir, "member.json"), `${JSON.stringify({ clusterId: "x", memberId: name })}\n`);
}

function emptyDataDir(m: AppModel, name: VoterName): void {
  rmSync(m.voters.find((v) => v.name === name)!.dataDir, { recursive: true, force: true });
}

describe("bootstrapIdFor", () => {
  it("tells each voter's first start to bootstrap one cluster, and no start once it has", () => {
    const m = model();
    const ids = (["voter1", "voter2", "voter3"] as const).map((name) => bootstrapIdFor(m, name));
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toMatch(/^[0-9a-f-]{36}$/);
    for (const name of ["voter1", "voter2", "voter3"] as const) giveIdentity(m, name);
    // Started again, after a stop or after its data was lost: it joins, never bootstraps.
    expect(bootstrapIdFor(m, "voter2")).toBeNull();
    emptyDataDir(m, "voter1");
    expect(bootstrapIdFor(m, "voter1")).toBeNull();
  });

  it("keeps handing the same ID to voters that were spawned but never bootstrapped", () => {
    const m = model();
    // A first `up` that failed (or was interrupted) before any voter wrote its identity.
    const first = (["voter1", "voter2", "voter3"] as const).map((name) => bootstrapIdFor(m, name));
    mkdirSync(join(m.voters[0]!.dataDir, "raft"), { recursive: true }); // created, nothing kept
    const again = (["voter1", "voter2", "voter3"] as const).map((name) => bootstrapIdFor(m, name));
    expect(again).toEqual(first);
    expect(new Set(again).size).toBe(1);
  });

  it("remembers a voter that bootstrapped, so losing its data later never makes it bootstrap again", () => {
    const m = model();
    const id = bootstrapIdFor(m, "voter3");
    giveIdentity(m, "voter1");
    giveIdentity(m, "voter3");
    recordBootstrapped(m);
    emptyDataDir(m, "voter3");
    expect(bootstrapIdFor(m, "voter3")).toBeNull();
    // A voter that never came up still bootstraps the same cluster.
    expect(bootstrapIdFor(m, "voter2")).toBe(id);
    expect(JSON.parse(readFileSync(m.bootstrapFile, "utf8")).started).toEqual(["voter1", "voter3"]);
  });

  it("bootstraps again when no voter holds an identity, whatever an older record says", () => {
    const m = model();
    writeFileSync(
      m.bootstrapFile,
      `${JSON.stringify({ clusterId: "c-1", started: ["voter1", "voter2", "voter3"] })}\n`,
    );
    expect((["voter1", "voter2", "voter3"] as const).map((name) => bootstrapIdFor(m, name))).toEqual([
      "c-1",
      "c-1",
      "c-1",
    ]);
  });

  it("refuses a damaged record rather than bootstrap a second cluster", () => {
    const m = model();
    writeFileSync(m.bootstrapFile, "{not json");
    expect(() => bootstrapIdFor(m, "voter1")).toThrow(StateDirError);
  });
});
