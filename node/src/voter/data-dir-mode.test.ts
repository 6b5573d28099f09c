import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { loadVoterConfig } from "../config/voter-config.js";
import { modeOf, withUsualUmask } from "../fs/test-fixtures/usual-umask.js";
import { pickFreePorts } from "../net/free-ports.js";
import { singleVoterEnv } from "./test-fixtures/cluster-envs.js";
import { type RunningVoter, startVoter } from "./voter.js";

withUsualUmask();

let root: string | undefined;
let voter: RunningVoter | undefined;
afterEach(async () => {
  await voter?.shutdown();
  voter = undefined;
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

async function start(dataDir: string, lines: Record<string, unknown>[]): Promise<RunningVoter> {
  const [httpPort, peerPort] = (await pickFreePorts("127.0.0.1", 2)) as [number, number];
  const config = loadVoterConfig({ env: singleVoterEnv(dataDir, httpPort, peerPort) });
  const logger = pino(
    { level: "warn", base: { nodeId: config.node.id } },
    { write: (line: string) => lines.push(JSON.parse(line)) },
  );
  return startVoter(config, logger);
}

describe("the voter's data directory", () => {
  it("is created owner-only, with every directory the voter makes in it", async () => {
    root = mkdtempSync(join(tmpdir(), "keyload-data-dir-mode-"));
    const dataDir = join(root, "data", "voter1");
    const lines: Record<string, unknown>[] = [];
    voter = await start(dataDir, lines);
    const made = [join(root, "data"), dataDir, join(dataDir, "raft"), join(dataDir, "raft", "snapshots")];
    for (const dir of [...made, join(dataDir, "state")]) expect([dir, modeOf(dir)]).toEqual([dir, 0o700]);
    expect(lines.filter((l) => l.dir !== undefined)).toEqual([]);
  });

  it("is warned of, with the node ID, when it already exists open to others", async () => {
    root = mkdtempSync(join(tmpdir(), "keyload-data-dir-mode-"));
    const dataDir = join(root, "voter1");
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o755);
    const lines: Record<string, unknown>[] = [];
    voter = await start(dataDir, lines);
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 40, nodeId: "voter1", dir: dataDir, mode: "755" }),
    );
    // Left as the operator set it; what the voter creates inside is owner-only all the same.
    expect(modeOf(dataDir)).toBe(0o755);
    expect(modeOf(join(dataDir, "raft"))).toBe(0o700);
  });
});
