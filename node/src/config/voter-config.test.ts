import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_MAX_FRAME_BYTES } from "../peer/frame-codec.js";
import { ConfigError } from "./config-error.js";
import { REQUIRED_ENV } from "./test-fixtures/required-env.js";
import { loadVoterConfig } from "./voter-config.js";

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
    const c = loadVoterConfig({ env: REQUIRED_ENV });
    expect(c.node).toEqual({
      id: "voter1",
      httpHost: "127.0.0.1",
      httpPort: 7101,
      httpAdvertisedUrl: "",
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
    expect(c.tls).toEqual({ httpCertFile: "", httpKeyFile: "" });
    expect(c.connections).toEqual({
      maxHttp: 4096,
      maxPeerHandshakes: 64,
      maxPeerHandshakesPerSource: 8,
      peerHandshakeTimeoutMs: 2000,
    });
    expect(c.cluster.voters.map((v) => `${v.id}@${v.port}`)).toEqual([
      "voter1@7201",
      "voter2@7202",
      "voter3@7203",
    ]);
  });

  it("reads environment keys in any case and lets arguments win over them", () => {
    const env = {
      ...REQUIRED_ENV,
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
      env: { ...REQUIRED_ENV, KeyLoad__HttpAdmission__MaxRequests: "7" },
      args: ["--config", file],
    });
    expect(c.httpAdmission.MaxRequests).toBe(7);
    expect(c.raft.heartbeatIntervalMs).toBe(50);
  });

  it("names the key and the source of an invalid value", () => {
    const err = configError(() =>
      loadVoterConfig({ env: { ...REQUIRED_ENV, KeyLoad__CommandAdmission__MaxCommands: "-3" } }),
    );
    expect(err.key).toBe("KeyLoad:CommandAdmission:MaxCommands");
    expect(err.message).toContain("KeyLoad__CommandAdmission__MaxCommands");
    expect(err.message).toContain('"-3"');
  });

  it("never echoes a secret value", () => {
    const err = configError(() =>
      loadVoterConfig({ env: { ...REQUIRED_ENV, KeyLoad__Cluster__Secret: "short" } }),
    );
    expect(err.key).toBe("KeyLoad:Cluster:Secret");
    expect(err.message).not.toContain("short");
  });

  it("refuses unknown keys, missing required keys and malformed arguments", () => {
    expect(
      configError(() => loadVoterConfig({ env: { ...REQUIRED_ENV, KeyLoad__Raft__ElectionTimeout: "5" } }))
        .key,
    ).toBe("KeyLoad:Raft:ElectionTimeout");
    const { KeyLoad__Node__DataDir: _omitted, ...withoutDataDir } = REQUIRED_ENV;
    expect(configError(() => loadVoterConfig({ env: withoutDataDir })).key).toBe("KeyLoad:Node:DataDir");
    expect(configError(() => loadVoterConfig({ env: REQUIRED_ENV, args: ["--verbose"] })).key).toBe(
      "--verbose",
    );
    expect(configError(() => loadVoterConfig({ env: { ...REQUIRED_ENV, KeyLoad__Node: "x" } })).key).toBe(
      "KeyLoad__Node",
    );
  });

  it("accepts a deprecated setting, checks its value, leaves it out and reports where it came from", () => {
    expect(loadVoterConfig({ env: REQUIRED_ENV }).deprecations).toEqual([]);
    const c = loadVoterConfig({
      env: REQUIRED_ENV,
      args: ["--KeyLoad:Raft:SnapshotSizeRatio=3", "--KeyLoad:Raft:SnapshotIntervalEntries=500"],
    });
    expect(c.deprecations).toEqual([
      {
        key: "KeyLoad:Raft:SnapshotSizeRatio",
        source: "argument --KeyLoad:Raft:SnapshotSizeRatio",
        message: expect.stringMatching(/^is deprecated and has no effect: .*0021-lazy-snapshots/),
      },
    ]);
    expect(Object.keys(c.raft)).not.toContain("snapshotSizeRatio");
    expect(c.raft.snapshotIntervalEntries).toBe(500);
    const err = configError(() =>
      loadVoterConfig({ env: { ...REQUIRED_ENV, KeyLoad__Raft__SnapshotSizeRatio: "two" } }),
    );
    expect(err.key).toBe("KeyLoad:Raft:SnapshotSizeRatio");
    expect(err.message).toContain("an integer from 0 to 1000");
  });

  it("checks the voter list and that it names this node", () => {
    expect(
      configError(() =>
        loadVoterConfig({ env: { ...REQUIRED_ENV, KeyLoad__Cluster__Voters: "voter1@h:1,voter1@h:2" } }),
      ).key,
    ).toBe("KeyLoad:Cluster:Voters");
    expect(
      configError(() => loadVoterConfig({ env: { ...REQUIRED_ENV, KeyLoad__Cluster__Voters: "voter2@h:1" } }))
        .message,
    ).toContain("this node's id voter1");
  });

  it("refuses a key set twice differently in the environment, a config file with more than its root, and an empty --config", () => {
    const twice = {
      ...REQUIRED_ENV,
      KeyLoad__Raft__ElectionTimeoutMs: "2000",
      KEYLOAD__RAFT__ELECTIONTIMEOUTMS: "3000",
    };
    expect(configError(() => loadVoterConfig({ env: twice })).message).toContain("set twice");
    const same = { ...twice, KEYLOAD__RAFT__ELECTIONTIMEOUTMS: "2000" };
    expect(loadVoterConfig({ env: same }).raft.electionTimeoutMs).toBe(2000);
    dir = mkdtempSync(join(tmpdir(), "keyload-config-"));
    for (const [name, content] of [
      ["stray.json", { KeyLoad: { Raft: { ElectionTimeoutMs: 2000 } }, Raft: { ElectionTimeoutMs: "zzz" } }],
      ["two-roots.json", { KeyLoad: {}, keyload: { Raft: { ElectionTimeoutMs: "zzz" } } }],
    ] as const) {
      const file = join(dir, name);
      writeFileSync(file, JSON.stringify(content));
      expect(configError(() => loadVoterConfig({ env: REQUIRED_ENV, args: ["--config", file] })).key).toBe(
        `config file ${file}`,
      );
    }
    expect(configError(() => loadVoterConfig({ env: REQUIRED_ENV, args: ["--config="] })).key).toBe(
      "--config",
    );
  });

  it("refuses one key set twice differently in a config file or in the arguments, and two config files", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-config-"));
    const file = join(dir, "twice.json");
    writeFileSync(
      file,
      JSON.stringify({ KeyLoad: { Raft: { ElectionTimeoutMs: 1000 }, raft: { electiontimeoutms: 5000 } } }),
    );
    expect(
      configError(() => loadVoterConfig({ env: REQUIRED_ENV, args: ["--config", file] })).message,
    ).toContain("set twice");
    const args = ["--KeyLoad:Raft:ElectionTimeoutMs=1000", "--keyload:raft:electiontimeoutms=5000"];
    expect(configError(() => loadVoterConfig({ env: REQUIRED_ENV, args })).message).toContain("set twice");
    const same = ["--KeyLoad:Raft:ElectionTimeoutMs=3000", "--keyload:raft:electiontimeoutms=3000"];
    expect(loadVoterConfig({ env: REQUIRED_ENV, args: same }).raft.electionTimeoutMs).toBe(3000);
    const other = join(dir, "other.json");
    writeFileSync(other, JSON.stringify({ KeyLoad: {} }));
    expect(
      configError(() =>
        loadVoterConfig({ env: REQUIRED_ENV, args: ["--config", other, `--config=${other}`] }),
      ).key,
    ).toBe("--config");
  });

  it("says where a config file is not JSON without quoting it: it may hold the cluster secret", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-config-"));
    const file = join(dir, "broken.json");
    const secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I=";
    writeFileSync(file, `{"KeyLoad": {\n  "Cluster": {"Secret": "${secret}",}\n}}`);
    const error = configError(() => loadVoterConfig({ env: REQUIRED_ENV, args: ["--config", file] }));
    expect(error.key).toBe(`config file ${file}`);
    expect(error.message).toMatch(/line 2, column \d+/);
    for (let i = 0; i + 6 <= secret.length; i++) expect(error.message).not.toContain(secret.slice(i, i + 6));
  });

  it("refuses canonical limits that contradict each other, naming the key, before storage opens", () => {
    const env = { ...REQUIRED_ENV, KeyLoad__Canonical__DedupeRetentionMs: "1" };
    expect(configError(() => loadVoterConfig({ env })).key).toBe("KeyLoad:Canonical:DedupeRetentionMs");
    const visibility = { ...REQUIRED_ENV, KeyLoad__Canonical__DefaultVisibilityTimeoutMs: "99999999999" };
    expect(configError(() => loadVoterConfig({ env: visibility })).key).toBe(
      "KeyLoad:Canonical:DefaultVisibilityTimeoutMs",
    );
  });

  it("refuses a heartbeat interval too close to the election timeout", () => {
    const env = { ...REQUIRED_ENV, KeyLoad__Raft__HeartbeatIntervalMs: "600" };
    expect(configError(() => loadVoterConfig({ env })).key).toBe("KeyLoad:Raft:HeartbeatIntervalMs");
  });

  it("reads the disk floor's settings and refuses a soft floor under the hard one", () => {
    expect(loadVoterConfig({ env: REQUIRED_ENV }).disk).toEqual({
      softFloorBytes: 0,
      marginBytes: 256 * 1024 * 1024,
      hardFloorBytes: 64 * 1024 * 1024,
      probeIntervalMs: 1000,
    });
    const env = {
      ...REQUIRED_ENV,
      KeyLoad__Disk__SoftFloorBytes: "1000",
      KeyLoad__Disk__HardFloorBytes: "2000",
    };
    expect(configError(() => loadVoterConfig({ env })).key).toBe("KeyLoad:Disk:SoftFloorBytes");
    const ok = { ...env, KeyLoad__Disk__SoftFloorBytes: "0" };
    expect(loadVoterConfig({ env: ok }).disk).toMatchObject({ softFloorBytes: 0, hardFloorBytes: 2000 });
  });

  it("bounds the databases' native limits", () => {
    const tooLarge = { ...REQUIRED_ENV, KeyLoad__Storage__StateMmapBytes: String(4 * 1024 ** 3) };
    expect(configError(() => loadVoterConfig({ env: tooLarge })).key).toBe("KeyLoad:Storage:StateMmapBytes");
    const tooSmall = { ...REQUIRED_ENV, KeyLoad__Storage__LogWalLimitBytes: "4096" };
    expect(configError(() => loadVoterConfig({ env: tooSmall })).key).toBe(
      "KeyLoad:Storage:LogWalLimitBytes",
    );
  });

  it("reads the advertised HTTP URL as an origin and refuses one with a path, a query or another scheme", () => {
    const advertised = (url: string) =>
      loadVoterConfig({ env: { ...REQUIRED_ENV, KeyLoad__Node__HttpAdvertisedUrl: url } }).node
        .httpAdvertisedUrl;
    expect(advertised("http://voter1.example:7101")).toBe("http://voter1.example:7101");
    expect(advertised("http://Voter1.Example:80/")).toBe("http://voter1.example");
    expect(advertised("http://[fd00::1]:7101")).toBe("http://[fd00::1]:7101");
    for (const bad of [
      "voter1.example:7101",
      "/v1",
      "ftp://voter1.example",
      "http://voter1.example:7101/keyload",
      "http://voter1.example:7101/?a=1",
      "http://voter1.example:7101#x",
      "http://user:pw@voter1.example",
      "http://voter1.example:99999",
    ]) {
      const err = configError(() =>
        loadVoterConfig({ env: { ...REQUIRED_ENV, KeyLoad__Node__HttpAdvertisedUrl: bad } }),
      );
      expect(err.key, bad).toBe("KeyLoad:Node:HttpAdvertisedUrl");
      expect(err.message, bad).toContain("absolute http(s) URL");
    }
  });

  it("refuses a wildcard HTTP bind without an advertised URL, which would be handed out as the leader's address", () => {
    for (const host of ["0.0.0.0", "::", "0:0:0:0:0:0:0:0"]) {
      const env = { ...REQUIRED_ENV, KeyLoad__Node__HttpHost: host };
      const err = configError(() => loadVoterConfig({ env }));
      expect(err.key, host).toBe("KeyLoad:Node:HttpAdvertisedUrl");
      expect(err.message, host).toContain(`wildcard address ${host}`);
      const advertised = { ...env, KeyLoad__Node__HttpAdvertisedUrl: "http://voter1.example:7101" };
      expect(loadVoterConfig({ env: advertised }).node).toMatchObject({
        httpHost: host,
        httpAdvertisedUrl: "http://voter1.example:7101",
      });
    }
    // A specific address, the loopback included, is advertised as it is.
    expect(loadVoterConfig({ env: { ...REQUIRED_ENV, KeyLoad__Node__HttpHost: "::1" } }).node.httpHost).toBe(
      "::1",
    );
  });

  it("takes both TLS files or neither, and an advertised URL whose scheme says which", () => {
    const tls = {
      KeyLoad__Tls__HttpCertFile: "/etc/keyload/voter1.pem",
      KeyLoad__Tls__HttpKeyFile: "/k.pem",
    };
    expect(loadVoterConfig({ env: { ...REQUIRED_ENV, ...tls } }).tls).toEqual({
      httpCertFile: "/etc/keyload/voter1.pem",
      httpKeyFile: "/k.pem",
    });
    const onlyCert = { ...REQUIRED_ENV, KeyLoad__Tls__HttpCertFile: "/etc/keyload/voter1.pem" };
    expect(configError(() => loadVoterConfig({ env: onlyCert })).key).toBe("KeyLoad:Tls:HttpKeyFile");
    const onlyKey = { ...REQUIRED_ENV, KeyLoad__Tls__HttpKeyFile: "/k.pem" };
    expect(configError(() => loadVoterConfig({ env: onlyKey })).key).toBe("KeyLoad:Tls:HttpCertFile");

    const httpsOverPlain = {
      ...REQUIRED_ENV,
      KeyLoad__Node__HttpAdvertisedUrl: "https://voter1.example:7101",
    };
    expect(configError(() => loadVoterConfig({ env: httpsOverPlain })).message).toContain(
      "must be an http URL",
    );
    const plainOverTls = {
      ...REQUIRED_ENV,
      ...tls,
      KeyLoad__Node__HttpAdvertisedUrl: "http://voter1.example:7101",
    };
    const err = configError(() => loadVoterConfig({ env: plainOverTls }));
    expect(err.key).toBe("KeyLoad:Node:HttpAdvertisedUrl");
    expect(err.message).toContain("must be an https URL");
    const wildcard = {
      ...REQUIRED_ENV,
      ...tls,
      KeyLoad__Node__HttpHost: "0.0.0.0",
      KeyLoad__Node__HttpPort: "443",
    };
    expect(configError(() => loadVoterConfig({ env: wildcard })).message).toContain(
      "e.g. https://voter1.example:443",
    );
  });

  it("bounds the open HTTP connections", () => {
    expect(
      loadVoterConfig({ env: { ...REQUIRED_ENV, KeyLoad__Connections__MaxHttp: "2" } }).connections.maxHttp,
    ).toBe(2);
    const none = { ...REQUIRED_ENV, KeyLoad__Connections__MaxHttp: "0" };
    expect(configError(() => loadVoterConfig({ env: none })).key).toBe("KeyLoad:Connections:MaxHttp");
  });
});

describe("loadVoterConfig's admission and transport bounds", () => {
  const MiB = 1024 * 1024;

  it("accepts any HTTP pool and command lane budget: a request or command that never fits is refused", () => {
    // A voter may be set to refuse whole kinds of request (a pool too small for a heavy read): its
    // admission refuses each at once, never queued (HttpPool), and tests set tiny budgets on purpose.
    const c = loadVoterConfig({
      env: {
        ...REQUIRED_ENV,
        KeyLoad__HttpAdmission__MaxModeledBytes: String(MiB),
        KeyLoad__HttpAdmission__ControlMaxModeledBytes: "1",
        KeyLoad__CommandAdmission__MaxRetainedBytes: "1",
        KeyLoad__CommandAdmission__ControlMaxRetainedBytes: "1",
      },
    });
    expect(c.httpAdmission.MaxModeledBytes).toBe(MiB);
    expect(c.httpAdmission.ControlMaxModeledBytes).toBe(1);
    expect(c.commandAdmission.MaxRetainedBytes).toBe(1);
  });

  it("refuses body and mutation limits above what one peer frame carries, naming the largest that fits", () => {
    for (const [variable, key] of [
      ["KeyLoad__Canonical__MaxMutationBytes", "KeyLoad:Canonical:MaxMutationBytes"],
      ["KeyLoad__HttpAdmission__MaxDataBodyBytes", "KeyLoad:HttpAdmission:MaxDataBodyBytes"],
      ["KeyLoad__HttpAdmission__MaxControlBodyBytes", "KeyLoad:HttpAdmission:MaxControlBodyBytes"],
    ] as const) {
      // A 70 MB write of such a configuration made its leader fail every append and lose leadership.
      const err = configError(() => loadVoterConfig({ env: { ...REQUIRED_ENV, [variable]: "100000000" } }));
      expect(err.key, variable).toBe(key);
      const largest = Number(/at most (\d+)/.exec(err.message)?.[1]);
      // A forwarded body is JSON-escaped into the frame: up to twice its bytes, and the frame's other fields.
      expect(2 * largest, variable).toBeLessThan(DEFAULT_MAX_FRAME_BYTES);
      expect(largest, variable).toBeGreaterThanOrEqual(8 * MiB);
      expect(() => loadVoterConfig({ env: { ...REQUIRED_ENV, [variable]: String(largest) } })).not.toThrow();
      expect(
        configError(() => loadVoterConfig({ env: { ...REQUIRED_ENV, [variable]: String(largest + 1) } })).key,
        variable,
      ).toBe(key);
    }
  });

  it("refuses peer port 0, a random port no peer would dial, and keeps HTTP port 0", () => {
    const err = configError(() =>
      loadVoterConfig({ env: { ...REQUIRED_ENV, KeyLoad__Node__PeerPort: "0" } }),
    );
    expect(err.key).toBe("KeyLoad:Node:PeerPort");
    expect(err.message).toContain("an integer from 1 to 65535");
    expect(loadVoterConfig({ env: { ...REQUIRED_ENV, KeyLoad__Node__HttpPort: "0" } }).node.httpPort).toBe(0);
  });
});
