import { dirname, isAbsolute, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { TranspileError } from "../transpile-error.js";
import { transpilePackage } from "../transpile-package.js";

/** This package (`node/`), and the contract package it imports, through the workspace's link. */
export const NODE_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const SRC_DIR = join(NODE_DIR, "src");
const DIST_DIR = join(NODE_DIR, "dist");
const CONTRACT_DIR = join(NODE_DIR, "node_modules", "@keyload", "contract");
/** The package with its test fixtures, for the processes tests start on a fixture (outside `dist`). */
const FIXTURES_OUT_DIR = join(NODE_DIR, ".test-dist");

let voter: Promise<unknown> | undefined;
let fixtures: Promise<unknown> | undefined;

/** This package and the contract it imports transpiled to their `dist`, as the AppHost runs a voter. */
export function transpileToDist(): Promise<unknown> {
  return Promise.all([transpilePackage(CONTRACT_DIR), transpilePackage(NODE_DIR)]);
}

/** The voter transpiled (`transpileToDist`), once per test file. Resolves to its entry point. */
export async function transpiledVoter(): Promise<string> {
  voter ??= transpileToDist();
  await voter;
  return join(DIST_DIR, "main.js");
}

/** Where a module of `src/` lands in a transpiled tree (`dist/` by default); undefined outside `src/`. */
export function transpiledPath(source: URL, outDir: string = DIST_DIR): string | undefined {
  const rel = relative(SRC_DIR, fileURLToPath(source));
  if (rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined;
  return join(outDir, rel.replace(/\.ts$/, ".js"));
}

/**
 * A test fixture of this package transpiled with the rest of it (to `.test-dist`, the contract to its
 * `dist`), so a child process runs it on plain Node rather than through tsx's loader, which costs each
 * child over a second of CPU; once per test file. Resolves to the fixture's JavaScript.
 */
export async function transpiledFixture(source: URL): Promise<string> {
  fixtures ??= Promise.all([
    transpilePackage(CONTRACT_DIR),
    transpilePackage(NODE_DIR, { outDir: FIXTURES_OUT_DIR, testFixtures: true }),
  ]);
  await fixtures;
  const path = transpiledPath(source, FIXTURES_OUT_DIR);
  if (path === undefined) throw new TranspileError(fileURLToPath(source), `not a module of ${SRC_DIR}`);
  return path;
}
