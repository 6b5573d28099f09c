import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "./config-error.js";
import { loadVoterConfig } from "./voter-config.js";

const BASE = {
  KeyLoad__Node__Id: "voter1",
  KeyLoad__Node__DataDir: "/tmp/v1",
  KeyLoad__Cluster__Voters: "voter1@127.0.0.1:7201,voter2@127.0.0.1:7202,voter3@127.0.0.1:7203",
  KeyLoad__Cluster__Secret: "0123456789abcdef-secret",
  KeyLoad__Bootstrap__AdminKey: "admin-key-0123456789",
};

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("loadVoterConfig", () => {
  it("fills the contract's defaults", () => {
    const c = loadVoterConfig({ env: BASE });
    expect(c.node).toEqual({
      id: "voter1",
      httpHost: "127.0.0.1",
      httpPort: 7101,
      peerHost: "127.0.0.1",
      peerPort: 7201,
      dataDir: "/tmp/v1",
    });
    expect(c.raft).toMatchObject({
      electionTimeoutMs: 1000,
      heartbeatIntervalMs: 100,
      replicationDeadlineMs: 10_000,
      readyLagEntries: 1000,
      followerApplyHoldMs: 10,
    });
    expect(c.commandAdmission.MaxRetainedBytes).toBe(134_217_728);
    expect(c.httpAdmission.MaxRequests).toBe(32);
    expect(c.canonical.maxMutationBytes).toBe(8 * 1024 * 1024);
    expect(c.cluster.voters.map((v) => `${v.id}@${v.port}`)).toEqual([
      "voter1@7201",
      "voter2@7202",
      "voter3@7203",
    ]);
  });

  it("reads environment keys in any case and lets arguments win over them", () => {
    const env = {
      ...BASE,
      KEYLOAD__commandadmission__maxretainedbytes: "1048576",
      keyload__Raft__ElectionTimeoutMs: "2000",
      KeyLoad__Raft__ReadyLagEntries: "5",
    };
    const c = loadVoterConfig({ env, args: ["--KeyLoad:Raft:ElectionTimeoutMs=3000"] });
    expect(c.commandAdmission.MaxRetainedBytes).toBe(1_048_576);
    expect(c.raft.electionTimeoutMs).toBe(3000);
    expect(c.raft.readyLagEntries).toBe(5);
  });

  it("takes a JSON file as the lowest source above the defaults", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-config-"));
    const file = join(dir, "voter.json");
    writeFileSync(
      file,
      JSON.stringify({ KeyLoad: { HttpAdmission: { MaxRequests: 5 }, raft: { heartbeatIntervalMs: 50 } } }),
    );
    const c = loadVoterConfig({
      env: { ...BASE, KeyLoad__HttpAdmission__MaxRequests: "7" },
      args: ["--config", file],
    });
    expect(c.httpAdmission.MaxRequests).toBe(7);
    expect(c.raft.heartbeatIntervalMs).toBe(50);
  });

  it("names the key and the source of an invalid value", () => {
    const err = configError(() =>
      loadVoterConfig({ env: { ...BASE, KeyLoad__CommandAdmission__MaxCommands: "-3" } }),
    );
    expect(err.key).toBe("KeyLoad:CommandAdmission:MaxCommands");
    expect(err.message).toContain("KeyLoad__CommandAdmission__MaxCommands");
    expect(err.message).toContain('"-3"');
  });

  it("never echoes a secret value", () => {
    const err = configError(() => loadVoterConfig({ env: { ...BASE, KeyLoad__Cluster__Secret: "short" } }));
    expect(err.key).toBe("KeyLoad:Cluster:Secret");
    expect(err.message).not.toContain("short");
  });

  it("refuses unknown keys, missing required keys and malformed arguments", () => {
    expect(
      configError(() => loadVoterConfig({ env: { ...BASE, KeyLoad__Raft__ElectionTimeout: "5" } })).key,
    ).toBe("KeyLoad:Raft:ElectionTimeout");
    const { KeyLoad__Node__DataDir: _omitted, ...withoutDataDir } = BASE;
    expect(configError(() => loadVoterConfig({ env: withoutDataDir })).key).toBe("KeyLoad:Node:DataDir");
    expect(configError(() => loadVoterConfig({ env: BASE, args: ["--verbose"] })).key).toBe("--verbose");
    expect(configError(() => loadVoterConfig({ env: { ...BASE, KeyLoad__Node: "x" } })).key).toBe(
      "KeyLoad__Node",
    );
  });

  it("checks the voter list and that it names this node", () => {
    expect(
      configError(() =>
        loadVoterConfig({ env: { ...BASE, KeyLoad__Cluster__Voters: "voter1@h:1,voter1@h:2" } }),
      ).key,
    ).toBe("KeyLoad:Cluster:Voters");
    expect(
      configError(() => loadVoterConfig({ env: { ...BASE, KeyLoad__Cluster__Voters: "voter2@h:1" } }))
        .message,
    ).toContain("this node's id voter1");
  });

  it("refuses a heartbeat interval too close to the election timeout", () => {
    const env = { ...BASE, KeyLoad__Raft__HeartbeatIntervalMs: "600" };
    expect(configError(() => loadVoterConfig({ env })).key).toBe("KeyLoad:Raft:HeartbeatIntervalMs");
  });

  it("reads the disk floor's settings and refuses a soft floor under the hard one", () => {
    expect(loadVoterConfig({ env: BASE }).disk).toEqual({
      softFloorBytes: 0,
      marginBytes: 256 * 1024 * 1024,
      hardFloorBytes: 64 * 1024 * 1024,
      probeIntervalMs: 1000,
    });
    const env = { ...BASE, KeyLoad__Disk__SoftFloorBytes: "1000", KeyLoad__Disk__HardFloorBytes: "2000" };
    expect(configError(() => loadVoterConfig({ env })).key).toBe("KeyLoad:Disk:SoftFloorBytes");
    const ok = { ...env, KeyLoad__Disk__SoftFloorBytes: "0" };
    expect(loadVoterConfig({ env: ok }).disk).toMatchObject({ softFloorBytes: 0, hardFloorBytes: 2000 });
  });

  it("bounds the databases' native limits", () => {
    const tooLarge = { ...BASE, KeyLoad__Storage__StateMmapBytes: String(4 * 1024 ** 3) };
    expect(configError(() => loadVoterConfig({ env: tooLarge })).key).toBe("KeyLoad:Storage:StateMmapBytes");
    const tooSmall = { ...BASE, KeyLoad__Storage__LogWalLimitBytes: "4096" };
    expect(configError(() => loadVoterConfig({ env: tooSmall })).key).toBe(
      "KeyLoad:Storage:LogWalLimitBytes",
    );
  });
});
