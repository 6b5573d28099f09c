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

// node-gyp builds native modules against the local Node headers instead of downloading them.
const env = { ...process.env };
if (!env.npm_config_nodedir && existsSync("/usr/include/node/node.h")) env.npm_config_nodedir = "/usr";

const frozen = existsSync(join(root, "pnpm-lock.yaml")) ? ["--frozen-lockfile"] : [];
execFileSync("pnpm", ["install", ...frozen], { cwd: root, stdio: "inherit", env });

// The AppHost serves its dashboard from this build; nothing of it is fetched at run time.
execFileSync("pnpm", ["--filter", "@keyload/apphost", "build:dashboard"], {
  cwd: root,
  stdio: "inherit",
  env,
});
