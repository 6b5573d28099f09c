import { execFile } from "node:child_process";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { VOTER_NAMES } from "./app-model.js";
import { InvalidSettingError } from "./apphost-errors.js";
import { forwardConfig, mergeSources } from "./config-forwarding.js";
import { composeModel, composeYaml, healthcheckScript } from "./publish-compose.js";
import { checkPublishable } from "./publish-model.js";

const forwarded = forwardConfig(
  mergeSources(
    // As from .env: the process environment wins over it.
    { KeyLoad__Raft__ElectionTimeoutMs: "900", KeyLoad__Log__Level: "debug" },
    {
      KeyLoad__Raft__ElectionTimeoutMs: "1500",
      KeyLoad__CommandAdmission__MaxCommands: "100",
      AppHost__Voters__voter2__KeyLoad__CommandAdmission__MaxCommands: "7",
      AppHost__Voters__voter3__KeyLoad__HttpAdmission__MaxRequests: "5",
      KeyLoad__Canonical__SomeLimit: "pa$$word",
      PATH: "/usr/bin",
    },
  ).values(),
);

interface ParsedService {
  image: string;
  network_mode: string;
  environment: Record<string, string>;
  secrets: string[];
  volumes: string[];
  healthcheck: { test: string[] };
}

function parsed(): { services: Record<string, ParsedService>; volumes: object; secrets: object } {
  return parse(
    composeYaml(composeModel({ forwarded, ports: { httpPort: 7101, peerPort: 7201 }, image: "kv:1" })),
  );
}

describe("publish --target compose", () => {
  it("writes three voters on the host's network, each with its own ports, volume and health check", () => {
    const { services, volumes, secrets } = parsed();
    expect(Object.keys(services)).toEqual([...VOTER_NAMES]);
    VOTER_NAMES.forEach((voter, i) => {
      const service = services[voter]!;
      // Compose's own interpolation: the image can be named without editing the file.
      expect(service.image).toBe(["$", "{KEYLOAD_VOTER_IMAGE:-kv:1}"].join(""));
      expect(service.network_mode).toBe("host");
      expect(service.environment).toMatchObject({
        KeyLoad__Node__Id: voter,
        KeyLoad__Node__HttpHost: "0.0.0.0",
        KeyLoad__Node__HttpPort: String(7101 + i),
        KeyLoad__Node__HttpAdvertisedUrl: `http://127.0.0.1:${7101 + i}`,
        KeyLoad__Node__PeerHost: "127.0.0.1",
        KeyLoad__Node__PeerPort: String(7201 + i),
        KeyLoad__Cluster__Voters: "voter1@127.0.0.1:7201,voter2@127.0.0.1:7202,voter3@127.0.0.1:7203",
        KeyLoad__Cluster__Secret_FILE: "/run/secrets/cluster_secret",
        KeyLoad__Bootstrap__AdminKey_FILE: "/run/secrets/admin_key",
        KEYLOAD_BOOTSTRAP_RECORD: "dir:/bootstrap",
      });
      // Never the secret itself.
      expect(Object.keys(service.environment)).not.toContain("KeyLoad__Cluster__Secret");
      expect(service.secrets).toEqual(["cluster_secret", "admin_key"]);
      expect(service.volumes).toEqual([`${voter}-data:/data`, "bootstrap:/bootstrap"]);
      expect(service.healthcheck.test.slice(0, 3)).toEqual(["CMD", "/usr/local/bin/node", "-e"]);
      expect(service.healthcheck.test[3]).toContain(`http://127.0.0.1:${7101 + i}/health/ready`);
    });
    expect(Object.keys(volumes).sort()).toEqual(["bootstrap", "voter1-data", "voter2-data", "voter3-data"]);
    expect(secrets).toEqual({
      cluster_secret: { file: "./secrets/cluster_secret" },
      admin_key: { file: "./secrets/admin_key" },
    });
  });

  it("forwards the settings as the AppHost does, each voter's own over the shared, $ kept literal", () => {
    const { services } = parsed();
    const env = (voter: string) => services[voter]!.environment;
    for (const voter of VOTER_NAMES) {
      expect(env(voter).KeyLoad__Raft__ElectionTimeoutMs).toBe("1500");
      expect(env(voter).KeyLoad__Log__Level).toBe("debug");
      expect(env(voter).KeyLoad__Canonical__SomeLimit).toBe("pa$$$$word");
      expect(env(voter).PATH).toBeUndefined();
    }
    expect(env("voter1").KeyLoad__CommandAdmission__MaxCommands).toBe("100");
    expect(env("voter2").KeyLoad__CommandAdmission__MaxCommands).toBe("7");
    expect(env("voter3").KeyLoad__CommandAdmission__MaxCommands).toBe("100");
    expect(env("voter3").KeyLoad__HttpAdmission__MaxRequests).toBe("5");
    expect(env("voter1").KeyLoad__HttpAdmission__MaxRequests).toBeUndefined();
  });

  it("refuses a bootstrap ID of the user's: the record decides", () => {
    expect(() =>
      checkPublishable(forwardConfig([{ name: "KeyLoad__Cluster__BootstrapId", value: "c1" }])),
    ).toThrow(InvalidSettingError);
    expect(() => checkPublishable(forwarded)).not.toThrow();
  });

  it("checks health with a script Node.js runs: 0 for 200, 1 for anything else", async () => {
    const { createServer } = await import("node:http");
    const server = createServer((req, res) => {
      res.statusCode = req.url === "/ok" ? 200 : 503;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    // Asynchronously: the server answers from this very process.
    const run = (path: string): Promise<number> =>
      new Promise((resolve) => {
        const script = healthcheckScript(`http://127.0.0.1:${port}${path}`);
        execFile(process.execPath, ["-e", script], (err) => resolve(err === null ? 0 : Number(err.code)));
      });
    try {
      expect(await run("/ok")).toBe(0);
      expect(await run("/not-ready")).toBe(1);
    } finally {
      server.close();
    }
    expect(await run("/ok")).toBe(1);
  });
});
