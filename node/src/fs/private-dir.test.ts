import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { fsyncPath } from "./fsync.js";
import { ensurePrivateDir, makePrivateDir } from "./private-dir.js";
import { modeOf, withUsualUmask } from "./test-fixtures/usual-umask.js";

withUsualUmask();

vi.mock("./fsync.js", async (original) => {
  const real = await original<typeof import("./fsync.js")>();
  return { ...real, fsyncPath: vi.fn(real.fsyncPath) };
});

let root: string;
let lines: Record<string, unknown>[];
const logger = () =>
  pino({ base: { nodeId: "voter1" } }, { write: (line: string) => lines.push(JSON.parse(line)) });
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "keyload-private-dir-"));
  lines = [];
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("private directories", () => {
  it("are created owner-only, with every missing parent", () => {
    const dir = join(root, "a", "b", "c");
    expect(makePrivateDir(dir)).toBe(true);
    for (const path of [join(root, "a"), join(root, "a", "b"), dir]) expect(modeOf(path)).toBe(0o700);
    expect(makePrivateDir(dir)).toBe(false);
  });

  it("fsync each directory that holds one they made, so none is lost with a power cut", () => {
    vi.mocked(fsyncPath).mockClear();
    makePrivateDir(join(root, "x", "y"));
    expect(vi.mocked(fsyncPath).mock.calls.map(([path]) => path)).toEqual([join(root, "x"), root]);
    vi.mocked(fsyncPath).mockClear();
    makePrivateDir(join(root, "x", "y"));
    expect(fsyncPath).not.toHaveBeenCalled();
  });

  it("warn, with the node ID, of an existing directory open to others, and leave its mode", () => {
    const open = join(root, "open");
    mkdirSync(open);
    chmodSync(open, 0o755);
    ensurePrivateDir(open, logger());
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, nodeId: "voter1", dir: open, mode: "755", recommended: "700" }),
    ]);
    expect(modeOf(open)).toBe(0o755);
  });

  it("say nothing of one they create, nor of an existing owner-only one", () => {
    const fresh = join(root, "fresh");
    ensurePrivateDir(fresh, logger());
    expect(modeOf(fresh)).toBe(0o700);
    ensurePrivateDir(fresh, logger());
    expect(lines).toEqual([]);
  });
});
