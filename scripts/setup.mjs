#!/usr/bin/env node
// Prepares a fresh machine that has only Node and npm: installs the pinned pnpm when it is missing,
// then the workspace's dependencies with their native builds. Dependency-free on purpose: it runs
// before anything is installed.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const wanted = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).packageManager.split("@")[1];

function pnpmVersion() {
  const r = spawnSync("pnpm", ["--version"], { encoding: "utf8", shell: process.platform === "win32" });
  return r.status === 0 ? r.stdout.trim() : null;
}

if (pnpmVersion() !== wanted) {
  console.log(`setup: installing pnpm ${wanted}`);
  execFileSync("npm", ["install", "--global", `pnpm@${wanted}`], { stdio: "inherit" });
}

/** The major version of the Node whose headers are under `prefix`/include/node, if any. */
function headersMajor(prefix) {
  const file = join(prefix, "include", "node", "node_version.h");
  if (!existsSync(file)) return null;
  return /#define NODE_MAJOR_VERSION (\d+)/.exec(readFileSync(file, "utf8"))?.[1] ?? null;
}

// node-gyp builds native modules against local Node headers instead of downloading them: this Node's
// own (an npm-installed Node carries them), or the system's when they are of this Node's major version.
const env = { ...process.env };
const major = process.versions.node.split(".")[0];
if (!env.npm_config_nodedir) {
  const prefix = [dirname(dirname(process.execPath)), "/usr"].find((p) => headersMajor(p) === major);
  if (prefix) env.npm_config_nodedir = prefix;
}

const frozen = existsSync(join(root, "pnpm-lock.yaml")) ? ["--frozen-lockfile"] : [];
execFileSync("pnpm", ["install", ...frozen], { cwd: root, stdio: "inherit", env });

/** Why better-sqlite3 does not load on this Node, or null when it does. */
function sqliteProblem() {
  const r = spawnSync(process.execPath, ["-e", "new (require('better-sqlite3'))(':memory:').close()"], {
    cwd: join(root, "node"),
    encoding: "utf8",
  });
  if (r.status === 0) return null;
  const lines = r.stderr.trim().split("\n");
  return lines.find((line) => /Error|NODE_MODULE_VERSION/.test(line)) ?? lines[0] ?? `exit ${r.status}`;
}

// Installed under another Node, its native module fails to load here, and `pnpm install` finds nothing
// to do: it is rebuilt for this Node.
let problem = sqliteProblem();
if (problem !== null) {
  console.log(`setup: better-sqlite3 does not load on Node ${process.version} (${problem}); rebuilding it`);
  if (!env.npm_config_nodedir) {
    console.log("setup: no Node headers in /usr/include/node: node-gyp downloads them for the build");
  }
  execFileSync("pnpm", ["rebuild", "better-sqlite3"], { cwd: root, stdio: "inherit", env });
  problem = sqliteProblem();
  if (problem !== null) {
    console.error(`setup: better-sqlite3 still does not load on Node ${process.version}: ${problem}`);
    process.exit(1);
  }
}

// The AppHost serves its dashboard from this build; nothing of it is fetched at run time.
execFileSync("pnpm", ["--filter", "@keyload/apphost", "build:dashboard"], {
  cwd: root,
  stdio: "inherit",
  env,
});
