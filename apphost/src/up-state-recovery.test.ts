import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AppHostState } from "./apphost-state.js";
import { runCli, survivors } from "./test-fixtures/cli-process.js";

// `up` on state dirs a failed first `up`, a foreign admin key or a mistyped path left behind.
let dirs: string[] = [];
let stateDirs: string[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "keyload-up-recovery-"));
  dirs.push(dir);
  return dir;
}

function recordedPids(stateDir: string): number[] {
  const file = join(stateDir, "apphost.json");
  if (!existsSync(file)) return [];
  const state = JSON.parse(readFileSync(file, "utf8")) as AppHostState;
  return state.voters.flatMap((v) => (v.process ? [v.process.pid] : []));
}

afterEach(async () => {
  // Whatever a test did, no voter outlives it and no temp dir stays behind.
  for (const stateDir of stateDirs) {
    const pids = recordedPids(stateDir);
    await runCli(["down", "--state-dir", stateDir]);
    for (const pid of await survivors(pids, 5_000)) process.kill(pid, "SIGKILL");
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs = [];
  stateDirs = [];
});

const NO_STACK = /^\s+at /m;

describe("up on a state dir left behind", () => {
  it("forms the cluster after a first up that failed before any voter came up", async () => {
    const stateDir = join(tempDir(), "state");
    stateDirs.push(stateDir);
    const failed = await runCli(["up", "--detach", "--isolated", "--fresh", "--state-dir", stateDir], {
      KeyLoad__Nope__Prop: "1",
    });
    expect(failed.exitCode).toBe(1);
    expect(failed.stderr).toContain("[AppHostVoterFailedToStart]");
    const up = await runCli(["up", "--detach", "--isolated", "--state-dir", stateDir]);
    expect(up.exitCode, `${up.stdout}\n${up.stderr}`).toBe(0);
    expect(up.stdout).toContain("KeyLoad is ready");
    expect(JSON.parse(readFileSync(join(stateDir, "cluster.json"), "utf8")).started).toHaveLength(3);
  }, 120_000);

  it("refuses an admin key the cluster does not accept, leaving admin.key and the voters as they were", async () => {
    const stateDir = join(tempDir(), "state");
    stateDirs.push(stateDir);
    const first = await runCli(["up", "--detach", "--isolated", "--state-dir", stateDir]);
    expect(first.exitCode, first.stderr).toBe(0);
    const kept = readFileSync(join(stateDir, "admin.key"), "utf8");
    expect((await runCli(["down", "--state-dir", stateDir])).exitCode).toBe(0);

    const up = await runCli(["up", "--detach", "--isolated", "--state-dir", stateDir], {
      KeyLoad__Bootstrap__AdminKey: "not-the-key-this-cluster-was-bootstrapped-with",
    });
    expect(up.exitCode).toBe(1);
    expect(up.stderr).toContain("[AppHostAdminKeyRejected]");
    expect(up.stderr).toContain("KeyLoad__Bootstrap__AdminKey");
    expect(up.stderr).not.toMatch(NO_STACK);
    expect(up.stdout).not.toContain("KeyLoad is ready");
    expect(readFileSync(join(stateDir, "admin.key"), "utf8")).toBe(kept);
    // The cluster itself is fine: it keeps running, reachable with the kept key.
    const admission = await runCli(["admission", "--state-dir", stateDir]);
    expect(admission.exitCode, admission.stderr).toBe(0);
  }, 120_000);

  it("wipes for --fresh only what an AppHost keeps, and refuses a dir that holds none of it", async () => {
    const project = tempDir();
    // Brought down after the test should it start a cluster there after all.
    stateDirs.push(project);
    mkdirSync(join(project, "logs"));
    mkdirSync(join(project, "src"));
    writeFileSync(join(project, "src", "important.txt"), "mine\n");
    const refused = await runCli(["up", "--detach", "--isolated", "--fresh", "--state-dir", project]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain("does not look like a KeyLoad state dir");
    expect(readFileSync(join(project, "src", "important.txt"), "utf8")).toBe("mine\n");

    // A state dir whose state file is damaged, holding a file of someone else's too.
    const stateDir = join(tempDir(), "state");
    stateDirs.push(stateDir);
    mkdirSync(join(stateDir, "logs"), { recursive: true });
    writeFileSync(join(stateDir, "apphost.json"), "garbage\n");
    writeFileSync(join(stateDir, "notes.txt"), "keep\n");
    const status = await runCli(["status", "--state-dir", stateDir]);
    expect(status.exitCode).toBe(1);
    expect(status.stderr.trim().split("\n")).toHaveLength(1);
    expect(status.stderr.trim()).toMatch(/start over with --fresh \[AppHostStateDir\]$/);
    const up = await runCli(["up", "--detach", "--isolated", "--fresh", "--state-dir", stateDir]);
    expect(up.exitCode, `${up.stdout}\n${up.stderr}`).toBe(0);
    expect(readFileSync(join(stateDir, "notes.txt"), "utf8")).toBe("keep\n");
  }, 120_000);

  it("brings a cluster up without a voter that lost its data, which then rejoins, or waits for replace", async () => {
    const stateDir = join(tempDir(), "state");
    stateDirs.push(stateDir);
    const first = await runCli(["up", "--detach", "--isolated", "--state-dir", stateDir]);
    expect(first.exitCode, first.stderr).toBe(0);
    expect((await runCli(["down", "--state-dir", stateDir])).exitCode).toBe(0);
    rmSync(join(stateDir, "voter3"), { recursive: true, force: true });
    // Told not to ask, as with etcd, it waits for an admin.
    const manual = { KeyLoad__Cluster__NewMemberJoin: "manual" };
    const up = await runCli(["up", "--detach", "--isolated", "--state-dir", stateDir], manual);
    expect(up.exitCode, `${up.stdout}\n${up.stderr}`).toBe(0);
    expect(up.stdout).toContain("KeyLoad is ready");
    expect(up.stdout).toContain(`voter3 lost its data`);
    expect(up.stdout).toContain(`pnpm apphost replace voter3 --state-dir ${stateDir}`);
    // Leadership goes to no member the cluster does not hold, and it says so at once.
    const startedAt = Date.now();
    const transfer = await runCli(["transfer-leader", "voter3", "--state-dir", stateDir]);
    expect(transfer.exitCode).toBe(1);
    expect(transfer.stderr).toContain("voter3 runs as a new member");
    expect(Date.now() - startedAt).toBeLessThan(10_000);
    const replaced = await runCli(["replace", "voter3", "--state-dir", stateDir], manual);
    expect(replaced.exitCode, `${replaced.stdout}\n${replaced.stderr}`).toBe(0);

    // Shipped settings: it asks the leader to add it, as a learner, and to promote it once caught up.
    expect((await runCli(["down", "--state-dir", stateDir])).exitCode).toBe(0);
    rmSync(join(stateDir, "voter3"), { recursive: true, force: true });
    const again = await runCli(["up", "--detach", "--isolated", "--state-dir", stateDir]);
    expect(again.exitCode, `${again.stdout}\n${again.stderr}`).toBe(0);
    const deadline = Date.now() + 30_000;
    let voter3: { member?: string; health?: string; role?: string } | undefined;
    while (Date.now() < deadline) {
      const status = await runCli(["status", "--json", "--state-dir", stateDir]);
      const { voters } = JSON.parse(status.stdout) as { voters: (typeof voter3 & { name: string })[] };
      voter3 = voters.find((v) => v.name === "voter3");
      if (voter3?.member === "voter" && voter3.health === "ready") break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(voter3).toMatchObject({ member: "voter", health: "ready" });
  }, 180_000);

  it("names a state dir that is a file, or under one, in one line without a stack", async () => {
    const dir = tempDir();
    const file = join(dir, "F");
    writeFileSync(file, "x\n");
    for (const args of [
      ["--state-dir", file],
      ["--fresh", "--state-dir", file],
      ["--state-dir", join(file, "state")],
      ["--state-dir", join(dir, "missing", "state")],
    ]) {
      const up = await runCli(["up", "--detach", "--isolated", ...args]);
      expect(up.exitCode, up.stderr).toBe(1);
      expect(up.stderr).toContain("[AppHostStateDir]");
      expect(up.stderr).not.toMatch(NO_STACK);
      expect(up.stderr.trim().split("\n")).toHaveLength(1);
    }
    expect(readFileSync(file, "utf8")).toBe("x\n");
    mkdirSync(join(dir, "ok"));
    expect(existsSync(join(dir, "missing"))).toBe(false);
  }, 60_000);
});
