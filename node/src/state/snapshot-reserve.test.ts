import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { snapshotReserveBytes } from "./snapshot-reserve.js";

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe("snapshotReserveBytes", () => {
  it("is the state database's size with its WAL's, and nothing for files not there yet", async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-reserve-"));
    const path = join(dir, "state.sqlite");
    expect(await snapshotReserveBytes(path)).toBe(0);
    writeFileSync(path, Buffer.alloc(8192));
    expect(await snapshotReserveBytes(path)).toBe(8192);
    writeFileSync(`${path}-wal`, Buffer.alloc(4120));
    writeFileSync(`${path}.search`, Buffer.alloc(100_000));
    expect(await snapshotReserveBytes(path)).toBe(8192 + 4120);
  });
});
