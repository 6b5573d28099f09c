import { spawnSync } from "node:child_process";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const CLI = fileURLToPath(new URL("./cli.ts", import.meta.url));

function sim(...args: string[]) {
  return spawnSync(process.execPath, ["--conditions=source", "--import", "tsx", CLI, ...args], {
    // Where tsx resolves from: the package's own dependencies.
    cwd: dirname(CLI),
    encoding: "utf8",
    timeout: 60_000,
  });
}

describe("the simulator's command line", () => {
  it("answers a command line it cannot run with its usage and exit code 2, never a stack", () => {
    for (const [args, says] of [
      [["--profile", "constructor"], "unknown profile constructor; try default,"],
      [["--profile", "driver", "--seeds", "many"], "--seeds must be a non-negative integer, got many"],
      [["--sedes", "3"], "Unknown option '--sedes'"],
    ] as const) {
      const run = sim(...args);
      expect({ args, status: run.status }).toEqual({ args, status: 2 });
      expect(run.stderr).toContain(`sim: ${says}`);
      expect(run.stderr).toContain("usage: sim");
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it("runs the seeds it is asked for in a driver profile", () => {
    const run = sim("--profile", "driver-figure-eight", "--seeds", "2", "--from", "5");
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/2 seeds from 5 \(\d+ events\) in [\d.]+ s: \d+ seeds\/s, 0 failed/);
  });
});
