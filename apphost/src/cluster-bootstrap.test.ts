import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { buildAppModel, defaultPorts } from "./app-model.js";
import { StateDirError } from "./apphost-errors.js";
import { bootstrapIdFor } from "./cluster-bootstrap.js";

let stateDir: string | undefined;
afterEach(() => {
  if (stateDir !== undefined) rmSync(stateDir, { recursive: true, force: true });
  stateDir = undefined;
});

function model() {
  stateDir ??= mkdtempSync(`${tmpdir()}/keyload-bootstrap-`);
  return buildAppModel(stateDir, defaultPorts());
}

describe("bootstrapIdFor", () => {
  it("tells each voter's first start to bootstrap one cluster, and no later start", () => {
    const m = model();
    const ids = ["voter1", "voter2", "voter3"].map((name) => bootstrapIdFor(m, name as "voter1"));
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toMatch(/^[0-9a-f-]{36}$/);
    // Started again, after a stop or after its data was lost: it joins, never bootstraps.
    expect(bootstrapIdFor(m, "voter2")).toBeNull();
    expect(bootstrapIdFor(m, "voter1")).toBeNull();
  });

  it("refuses a damaged record rather than bootstrap a second cluster", () => {
    const m = model();
    writeFileSync(m.bootstrapFile, "{not json");
    expect(() => bootstrapIdFor(m, "voter1")).toThrow(StateDirError);
  });
});
