import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configHelp } from "./config-help.js";
import { loadVoterConfig, VOTER_CONFIG } from "./voter-config.js";

describe("configHelp", () => {
  const help = configHelp("keyload-node", VOTER_CONFIG);

  it("lists every declared setting with its variable, its valid values and its default or that it is required", () => {
    for (const [section, properties] of Object.entries(VOTER_CONFIG)) {
      for (const p of properties) {
        expect(help).toContain(`KeyLoad:${section}:${p.name}  (KeyLoad__${section}__${p.name})`);
      }
    }
    expect(help).toMatch(/KeyLoad:Node:DataDir .*\n\s+a directory path; required\n/);
    expect(help).toMatch(
      /KeyLoad:Raft:ElectionTimeoutMs .*\n\s+an integer from 10 to 600000; default 1000\n/,
    );
  });

  it("says a deprecated setting has no effect instead of offering its default", () => {
    expect(help).toMatch(/KeyLoad:Raft:SnapshotSizeRatio .*\n\s+deprecated, no effect: snapshot points copy/);
  });

  it("shows the config file in the shape loadVoterConfig reads", () => {
    const shape = /the JSON file \((\{.*\})\)/.exec(help)?.[1];
    expect(shape).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), "keyload-help-"));
    try {
      const file = join(dir, "voter.json");
      writeFileSync(
        file,
        shape!.replace("Section", "Raft").replace("Property", "ElectionTimeoutMs").replace("value", "5000"),
      );
      const config = loadVoterConfig({
        args: ["--config", file],
        env: {
          KeyLoad__Node__Id: "v1",
          KeyLoad__Node__DataDir: dir,
          KeyLoad__Cluster__Voters: "v1@127.0.0.1:7201",
          KeyLoad__Cluster__Secret: "cluster-secret-0123456789",
          KeyLoad__Bootstrap__AdminKey: "admin-key-0123456789",
        },
      });
      expect(config.raft.electionTimeoutMs).toBe(5000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
