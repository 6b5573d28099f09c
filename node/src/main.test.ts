import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const NODE_DIR = fileURLToPath(new URL("..", import.meta.url));

/** keyload-node from source with `args` and no KeyLoad settings at all. */
function keyloadNode(...args: string[]) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^keyload__/i.test(k)));
  return spawnSync(process.execPath, ["--conditions=source", "--import", "tsx", "src/main.ts", ...args], {
    cwd: NODE_DIR,
    env,
    encoding: "utf8",
    timeout: 30_000,
  });
}

describe("keyload-node", () => {
  it("prints its usage and every setting for --help, needing no configuration", () => {
    const run = keyloadNode("--help");
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^usage: keyload-node /);
    expect(run.stdout).toContain("KeyLoad:Cluster:Secret  (KeyLoad__Cluster__Secret)");
    expect(run.stderr).toBe("");
  });

  it("prints its package's version for --version", () => {
    const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    const run = keyloadNode("--version");
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(`keyload-node ${version}\n`);
  });

  it("still refuses an unknown argument, naming it", () => {
    const run = keyloadNode("--verbose");
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("invalid configuration: --verbose: unknown argument");
  });
});
