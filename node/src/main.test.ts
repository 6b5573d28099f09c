import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const NODE_DIR = fileURLToPath(new URL("..", import.meta.url));

/** keyload-node from source with `args` and no KeyLoad settings but `settings`. */
function keyloadNode(...args: string[]) {
  return keyloadNodeWith({}, ...args);
}

function keyloadNodeWith(settings: Record<string, string>, ...args: string[]) {
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^keyload__/i.test(k))),
    ...settings,
  };
  return spawnSync(process.execPath, ["--conditions=source", "--import", "tsx", "src/main.ts", ...args], {
    cwd: NODE_DIR,
    env,
    encoding: "utf8",
    timeout: 30_000,
  });
}

/** A one-voter configuration in `dir` whose TLS files do not exist: the start fails before anything listens. */
function withAbsentTlsFiles(dir: string): Record<string, string> {
  return {
    KeyLoad__Node__Id: "voter1",
    KeyLoad__Node__DataDir: join(dir, "voter1"),
    KeyLoad__Cluster__Voters: "voter1@127.0.0.1:7201",
    KeyLoad__Cluster__Secret: "cluster-secret-0123456789",
    KeyLoad__Bootstrap__AdminKey: "admin-key-0123456789",
    KeyLoad__Tls__HttpCertFile: join(dir, "absent.pem"),
    KeyLoad__Tls__HttpKeyFile: join(dir, "absent.key"),
  };
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

  it("refuses TLS files it cannot read as invalid configuration, naming the setting", () => {
    const dir = mkdtempSync(join(tmpdir(), "keyload-main-tls-"));
    try {
      const run = keyloadNodeWith(withAbsentTlsFiles(dir));
      expect(run.status).toBe(2);
      expect(run.stderr).toContain("invalid configuration: KeyLoad:Tls:HttpCertFile: cannot read");
      expect(run.stderr).not.toContain("    at ");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("warns at start of a deprecated setting, naming it and where it came from", () => {
    const dir = mkdtempSync(join(tmpdir(), "keyload-main-deprecated-"));
    try {
      // The warnings come first, then the TLS files end the start.
      const run = keyloadNodeWith(withAbsentTlsFiles(dir), "--KeyLoad:Raft:SnapshotSizeRatio=2");
      expect(run.status).toBe(2);
      const warnings = run.stdout
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as { level: number; setting?: string; source?: string; msg: string })
        .filter((line) => line.setting !== undefined);
      expect(warnings).toEqual([
        expect.objectContaining({
          level: 40,
          nodeId: "voter1",
          setting: "KeyLoad:Raft:SnapshotSizeRatio",
          source: "argument --KeyLoad:Raft:SnapshotSizeRatio",
          msg: expect.stringContaining("KeyLoad:Raft:SnapshotSizeRatio is deprecated and has no effect"),
        }),
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
