import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import fs from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { TranspileError } from "./transpile-error.js";
import { transpilePackage } from "./transpile-package.js";

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A package with `files` (paths under it) written, as an ESM package. */
function packageWith(files: Record<string, string>): string {
  dir = mkdtempSync(join(tmpdir(), "keyload-transpile-"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  for (const [path, contents] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), contents);
  }
  return dir;
}

function run(file: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ["--enable-source-maps", file], { encoding: "utf8" });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("transpiling a package's sources to run on plain Node", () => {
  it("writes each source to dist as JavaScript that runs, leaving tests and test fixtures out", async () => {
    const pkg = packageWith({
      "src/main.ts": [
        'import type { Shape } from "./shape.js";',
        'import { area } from "./geometry/area.js";',
        "const square: Shape = { side: 3 };",
        "console.log(area(square));",
      ].join("\n"),
      "src/shape.ts": 'export type { Shape } from "./geometry/sides.js";',
      "src/geometry/sides.ts": "export interface Shape { readonly side: number }",
      "src/geometry/area.ts": [
        'import type { Shape } from "./sides.js";',
        "export class Area { constructor(private readonly factor: number) {} of(s: Shape): number { return s.side * s.side * this.factor; } }",
        "export const area = (s: Shape): number => new Area(1).of(s);",
      ].join("\n"),
      "src/main.test.ts": "throw new Error('a test is not a source');",
      "src/test-fixtures/fixture.ts": "export const fixture = 1;",
      "src/types.d.ts": "declare const nothing: number;",
    });
    expect(await transpilePackage(pkg)).toBe(4);
    expect(run(join(pkg, "dist", "main.js"))).toMatchObject({ status: 0, stdout: "9\n" });
    expect(existsSync(join(pkg, "dist", "main.test.js"))).toBe(false);
    expect(existsSync(join(pkg, "dist", "test-fixtures"))).toBe(false);
    expect(existsSync(join(pkg, "dist", "types.d.js"))).toBe(false);
  });

  it("writes again only what changed since, and a stack names the source's lines", async () => {
    const pkg = packageWith({
      "src/main.ts": 'import { fail } from "./fail.js";\nfail();',
      "src/fail.ts": "export function fail(): never {\n  throw new Error('failed here');\n}",
    });
    expect(await transpilePackage(pkg)).toBe(2);
    expect(await transpilePackage(pkg)).toBe(0);
    const stack = run(join(pkg, "dist", "main.js")).stderr;
    expect(stack).toContain(`${join(pkg, "src", "fail.ts")}:2:`);

    const source = join(pkg, "src", "fail.ts");
    writeFileSync(source, "export function fail(): void {\n  console.log('fixed');\n}");
    // A second later than its output, whatever the file system's timestamp resolution.
    const later = statSync(join(pkg, "dist", "fail.js")).mtimeMs / 1000 + 1;
    utimesSync(source, later, later);
    expect(await transpilePackage(pkg)).toBe(1);
    expect(run(join(pkg, "dist", "main.js"))).toMatchObject({ status: 0, stdout: "fixed\n" });

    // A source put back as it was, its time older than the output (a restore, `cp -p`).
    writeFileSync(source, "export function fail(): void {\n  console.log('restored');\n}");
    utimesSync(source, later - 100, later - 100);
    expect(await transpilePackage(pkg)).toBe(1);
    expect(run(join(pkg, "dist", "main.js"))).toMatchObject({ status: 0, stdout: "restored\n" });
  });

  it("takes an edit saved while the source was being transpiled at the next run", async () => {
    const pkg = packageWith({ "src/main.ts": "console.log('first');" });
    const source = join(pkg, "src", "main.ts");
    // Saved a while ago, so the edit's time differs whatever the clock's resolution.
    const earlier = Date.now() / 1000 - 10;
    utimesSync(source, earlier, earlier);
    const read = fs.readFile;
    const spy = vi.spyOn(fs, "readFile").mockImplementation(async (...args: Parameters<typeof read>) => {
      const contents = await read(...args);
      // Saved just after the transpiler read the first version.
      if (args[0] === source) {
        spy.mockRestore();
        syncBuiltinESMExports();
        writeFileSync(source, "console.log('second');");
      }
      return contents;
    });
    // The transpiler's named import of readFile follows the builtin's own object once synced.
    syncBuiltinESMExports();
    expect(await transpilePackage(pkg)).toBe(1);
    expect(run(join(pkg, "dist", "main.js")).stdout).toBe("first\n");
    expect(await transpilePackage(pkg)).toBe(1);
    expect(run(join(pkg, "dist", "main.js")).stdout).toBe("second\n");
  });

  it("takes the test fixtures too into another tree, for a test's child process", async () => {
    const pkg = packageWith({
      "src/count.ts": "export const count = (n: number): number => n + 1;",
      // The child imports a source outside the fixtures (a specifier built, or the import rules see it).
      "src/test-fixtures/child.ts": `import { count } from ${JSON.stringify("../count.js")};\nconsole.log(count(41));`,
    });
    const outDir = join(pkg, ".test-dist");
    expect(await transpilePackage(pkg, { outDir, testFixtures: true })).toBe(2);
    expect(run(join(outDir, "test-fixtures", "child.js"))).toMatchObject({ status: 0, stdout: "42\n" });
    expect(existsSync(join(pkg, "dist"))).toBe(false);
  });

  it("names the source it cannot transpile, and leaves no partial output", async () => {
    const pkg = packageWith({
      "src/main.ts": "export const fine = 1;",
      "src/broken.ts": "export const broken = ;",
    });
    const failure = await transpilePackage(pkg).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(TranspileError);
    expect(failure).toMatchObject({ code: "TranspileFailed", file: join(pkg, "src", "broken.ts") });
    expect(existsSync(join(pkg, "dist", "broken.js"))).toBe(false);
    expect(readFileSync(join(pkg, "dist", "main.js"), "utf8")).toContain("fine = 1");
  });

  it("refuses a package without sources as a TranspileError", async () => {
    const pkg = packageWith({});
    await expect(transpilePackage(pkg)).rejects.toMatchObject({ code: "TranspileFailed" });
  });
});
