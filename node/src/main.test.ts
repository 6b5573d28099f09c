import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { pickFreePorts } from "./net/free-ports.js";

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

/** A one-voter configuration in `dir` that gets as far as opening its storage. */
async function withStorage(dir: string): Promise<Record<string, string>> {
  const [httpPort, peerPort] = (await pickFreePorts("127.0.0.1", 2)) as [number, number];
  return {
    KeyLoad__Node__Id: "voter1",
    KeyLoad__Node__DataDir: join(dir, "voter1"),
    KeyLoad__Node__HttpPort: String(httpPort),
    KeyLoad__Node__PeerPort: String(peerPort),
    KeyLoad__Cluster__Voters: `voter1@127.0.0.1:${peerPort}`,
    KeyLoad__Cluster__Secret: "cluster-secret-0123456789",
    KeyLoad__Bootstrap__AdminKey: "admin-key-0123456789",
    KeyLoad__Log__Level: "silent",
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

  it("reports damaged storage it finds at start in one line with the error's code, without a stack", async () => {
    const dir = mkdtempSync(join(tmpdir(), "keyload-main-damaged-"));
    try {
      const settings = await withStorage(dir);
      const raft = join(dir, "voter1", "raft");
      mkdirSync(raft, { recursive: true });
      for (const [file, content, expected] of [
        [
          "member.json",
          "garbage",
          /^keyload-node: failed to start: .*member\.json is not a member identity.*\(code Internal, reason CorruptState\)\n$/,
        ],
        [
          "raft-log.sqlite",
          "not a database, not at all".repeat(200),
          /^keyload-node: failed to start: .*raft-log\.sqlite: .*SQLITE_NOTADB.*\(code StorageCorruption\)\n$/,
        ],
      ] as const) {
        rmSync(raft, { recursive: true, force: true });
        mkdirSync(raft, { recursive: true });
        writeFileSync(join(raft, file), content);
        const run = keyloadNodeWith(settings);
        expect(run.status, file).toBe(1);
        expect(run.stderr, file).toMatch(expected);
        expect(run.stderr, file).not.toContain("    at ");
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
