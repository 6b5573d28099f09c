import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { TranspileError } from "./transpile-error.js";

export interface TranspileOptions {
  /** Where the JavaScript goes, the tree of `src/` mirrored under it. Default: the package's `dist/`. */
  readonly outDir?: string;
  /**
   * Takes the test fixtures too, for tests whose child processes run one (a crash test's child); such
   * a tree belongs outside `dist/`, which holds what the package runs. Default: false.
   */
  readonly testFixtures?: boolean;
}

/**
 * Transpiles a workspace package's TypeScript sources (`src/`, tests and test fixtures left out) to
 * JavaScript in its `dist/`, where its `exports` point outside the `source` condition, so its processes
 * run on plain Node: no loader hooks, on every thread. File by file, with no type check (`tsc -b` does
 * that), as tsx does at run time; only a file whose output is missing or was not made from the source
 * as it is now (by modification time) is written again, so a run after an edit costs the edit. Each output is written beside and renamed into
 * place: processes transpiling at once write the same bytes, and none reads half a file.
 *
 * The output maps back to the sources (inline source maps): under `--enable-source-maps` a stack names
 * the `.ts` lines, as under tsx.
 *
 * @returns how many files were written
 * @throws TranspileError naming the first source that failed
 */
export async function transpilePackage(packageDir: string, options: TranspileOptions = {}): Promise<number> {
  const srcDir = join(packageDir, "src");
  const distDir = options.outDir ?? join(packageDir, "dist");
  const sources = await runnableSources(srcDir, options.testFixtures ?? false).catch((err: unknown) => {
    throw new TranspileError(srcDir, err instanceof Error ? err.message : String(err), { cause: err });
  });
  // Every file settles before a failure is reported: nothing is still being written after this returns.
  const results = await Promise.allSettled(
    sources.map(async (rel) => {
      const source = join(srcDir, rel);
      const output = join(distDir, rel.replace(/\.ts$/, ".js"));
      try {
        const sourceMtimeMs = await staleSource(source, output);
        if (sourceMtimeMs === undefined) return 0;
        await writeAtomically(output, await transpile(source, output), sourceMtimeMs);
        return 1;
      } catch (err) {
        if (err instanceof TranspileError) throw err;
        throw new TranspileError(source, err instanceof Error ? err.message : String(err), { cause: err });
      }
    }),
  );
  let written = 0;
  for (const result of results) {
    if (result.status === "rejected") throw result.reason;
    written += result.value;
  }
  return written;
}

/** The package's sources a process may load: `.ts` files, less declarations, tests and test fixtures. */
async function runnableSources(srcDir: string, testFixtures: boolean): Promise<string[]> {
  const entries = await readdir(srcDir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .filter((entry) => !entry.name.endsWith(".d.ts") && !entry.name.endsWith(".test.ts"))
    .map((entry) => relative(srcDir, join(entry.parentPath, entry.name)))
    .filter((rel) => testFixtures || !rel.split(/[\\/]/).includes("test-fixtures"));
}

/**
 * The source's modification time if its output must be written, else undefined. An output carries its
 * source's time as it was before the source was read (writeAtomically), so any other time means another
 * source: one edited while it was transpiled, one restored older, or an output some other build wrote.
 */
async function staleSource(source: string, output: string): Promise<number | undefined> {
  const [sourceStat, outputStat] = await Promise.all([stat(source), stat(output).catch(() => undefined)]);
  // Within a millisecond: the time goes through a double of seconds and back.
  const fresh = outputStat !== undefined && Math.abs(outputStat.mtimeMs - sourceStat.mtimeMs) < 1;
  return fresh ? undefined : sourceStat.mtimeMs;
}

/** The compiler options that change what a single file compiles to (tsconfig.base.json's). */
const TSCONFIG = { compilerOptions: { target: "ES2023", verbatimModuleSyntax: true } } as const;

async function transpile(source: string, output: string): Promise<string> {
  // Loaded only when something is stale: a command that finds everything fresh does without it.
  const { transform } = await import("esbuild").catch((err: unknown) => {
    throw new TranspileError(source, "esbuild cannot be loaded: run `pnpm install`", { cause: err });
  });
  const result = await transform(await readFile(source, "utf8"), {
    loader: "ts",
    format: "esm",
    target: "node20",
    tsconfigRaw: TSCONFIG,
    sourcemap: "inline",
    // The map names the source relative to the output, so it holds wherever the repository is.
    sourcefile: relative(dirname(output), source),
  });
  return result.code;
}

/** Writes `contents` beside `path`, gives it `mtimeMs`, and renames it into place. */
async function writeAtomically(path: string, contents: string, mtimeMs: number): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    await writeFile(temporary, contents);
    await utimes(temporary, mtimeMs / 1000, mtimeMs / 1000);
    await rename(temporary, path);
  } catch (err) {
    await rm(temporary, { force: true });
    throw err;
  }
}
