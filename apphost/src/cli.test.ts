import { mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AdmissionStatus, KeyLoadClient } from "@keyload/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterStatus } from "./cluster-status.js";
import { runCli, spawnCli, survivors } from "./test-fixtures/cli-process.js";

// One detached cluster, driven through the command line the way a script would.
let dir: string;
let stateDir: string;
let envFile: string;
let pids: number[] = [];

async function status(): Promise<ClusterStatus> {
  const result = await runCli(["status", "--json", "--state-dir", stateDir]);
  expect(result.exitCode, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as ClusterStatus;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "keyload-cli-"));
  stateDir = join(dir, "state");
  envFile = join(dir, ".env");
  writeFileSync(
    envFile,
    [
      "KeyLoad__CommandAdmission__MaxCommands=111",
      "KeyLoad__CommandAdmission__MaxCommandsPerTenant=77",
      "AppHost__Voters__voter3__KeyLoad__HttpAdmission__MaxRequests=9",
    ].join("\n"),
  );
  const up = await runCli(["up", "--detach", "--isolated", "--state-dir", stateDir, "--env-file", envFile], {
    KeyLoad__CommandAdmission__MaxCommands: "222",
    KeyLoad__HttpAdmission__MaxRequests: "20",
    AppHost__Voters__voter2__KeyLoad__HttpAdmission__MaxRequests: "5",
  });
  expect(up.exitCode, `${up.stdout}\n${up.stderr}`).toBe(0);
  expect(up.stdout).toContain("KeyLoad is ready");
  expect(up.stdout).toContain(join(stateDir, "admin.key"));
  pids = (await status()).voters.flatMap((v) => (v.pid === null ? [] : [v.pid]));
});

afterAll(async () => {
  // Whatever the tests did, nothing may outlive them.
  await runCli(["down", "--state-dir", stateDir]);
  for (const pid of await survivors(pids, 5_000)) process.kill(pid, "SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("the AppHost command line", () => {
  it("reports the contract's status JSON for a detached cluster", async () => {
    const s = await status();
    expect(Object.keys(s).sort()).toEqual(["adminKeyFile", "dashboardUrl", "runtime", "stateDir", "voters"]);
    expect(s).toMatchObject({ runtime: "process", stateDir, adminKeyFile: join(stateDir, "admin.key") });
    expect(s.voters.map((v) => v.name)).toEqual(["voter1", "voter2", "voter3"]);
    for (const v of s.voters) {
      expect(Object.keys(v).sort()).toEqual(
        [
          "appliedIndex",
          "commitIndex",
          "dataDir",
          "forwardedEnv",
          "health",
          "httpUrl",
          "member",
          "name",
          "peerAddress",
          "pid",
          "role",
          "state",
          "term",
        ].sort(),
      );
      expect(v).toMatchObject({ health: "ready", member: "voter" });
      expect(v.commitIndex).toBeGreaterThan(0);
      expect(v.appliedIndex).toBeGreaterThan(0);
      expect(v.state).toBe("running");
      expect(v.pid).toBeTypeOf("number");
      expect(v.httpUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(v.peerAddress).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(v.dataDir).toBe(join(stateDir, v.name));
      expect(["leader", "follower"]).toContain(v.role);
      expect(v.term).toBeGreaterThanOrEqual(1);
    }
    expect(s.voters.filter((v) => v.role === "leader")).toHaveLength(1);
  });

  it("keeps the admin key and the secret in owner-only files, and never shows them in status", async () => {
    const adminKey = readFileSync(join(stateDir, "admin.key"), "utf8").trim();
    const secret = readFileSync(join(stateDir, "cluster.secret"), "utf8").trim();
    expect(statSync(join(stateDir, "admin.key")).mode & 0o777).toBe(0o600);
    expect(statSync(join(stateDir, "cluster.secret")).mode & 0o777).toBe(0o600);
    const shown = JSON.stringify(await status());
    expect(shown).not.toContain(adminKey);
    expect(shown).not.toContain(secret);
  });

  it("shows the status table without the admin key, which only admission needs", async () => {
    const keyFile = join(stateDir, "admin.key");
    renameSync(keyFile, `${keyFile}.aside`);
    try {
      const table = await runCli(["status", "--state-dir", stateDir]);
      expect(table.exitCode, table.stderr).toBe(0);
      expect(table.stdout).toContain("voter1");
      const admission = await runCli(["admission", "--state-dir", stateDir]);
      expect(admission.exitCode).toBe(1);
      expect(admission.stderr).toContain("lacks the admin key");
    } finally {
      renameSync(`${keyFile}.aside`, keyFile);
    }
  });

  it("forwards shared and per-voter settings, the environment winning over .env", async () => {
    const s = await status();
    const expected = {
      voter1: { maxRequests: 20 },
      voter2: { maxRequests: 5 },
      voter3: { maxRequests: 9 },
    } as const;
    const adminKey = readFileSync(join(stateDir, "admin.key"), "utf8").trim();
    const client = new KeyLoadClient({ endpoints: s.voters.map((v) => v.httpUrl), apiKey: adminKey });
    try {
      for (const v of s.voters) {
        const admission = await client.admissionStatus({ endpoint: v.httpUrl });
        expect(admission.nodeId).toBe(v.name);
        expect(admission.commandAdmission.limits).toMatchObject({
          maxCommands: 222,
          maxCommandsPerTenant: 77,
        });
        expect(admission.httpAdmission.limits).toMatchObject(expected[v.name as keyof typeof expected]);
      }
    } finally {
      await client.close();
    }
    expect(s.voters[0]!.forwardedEnv).toEqual({
      KeyLoad__CommandAdmission__MaxCommands: "222",
      KeyLoad__CommandAdmission__MaxCommandsPerTenant: "77",
      KeyLoad__HttpAdmission__MaxRequests: "20",
    });
    expect(s.voters[1]!.forwardedEnv).toMatchObject({ KeyLoad__HttpAdmission__MaxRequests: "5" });
    expect(s.voters[2]!.forwardedEnv).toMatchObject({ KeyLoad__HttpAdmission__MaxRequests: "9" });
  });

  it("pauses and resumes a voter", async () => {
    const notPaused = await runCli(["resume", "voter2", "--state-dir", stateDir]);
    expect(notPaused.stdout).toContain("voter2 is already running");
    expect((await runCli(["pause", "voter2", "--state-dir", stateDir])).exitCode).toBe(0);
    expect((await runCli(["pause", "voter2", "--state-dir", stateDir])).stdout).toContain("already paused");
    expect((await status()).voters[1]).toMatchObject({ state: "paused", role: "unknown", health: "unknown" });
    // A paused voter cannot say what it is; the configuration the others hold can, once they answer
    // reads again (after an election, if it led).
    await expect.poll(async () => (await status()).voters[1]!.member, { timeout: 10_000 }).toBe("voter");
    expect((await runCli(["resume", "voter2", "--state-dir", stateDir])).exitCode).toBe(0);
    expect((await status()).voters[1]).toMatchObject({ state: "running" });
  });

  it("shows a voter's logs, a client's admission reads among them but not the AppHost's own", async () => {
    const voter1 = (await status()).voters[0]!;
    expect((await runCli(["admission", "voter1", "--state-dir", stateDir])).exitCode).toBe(0);
    const adminKey = readFileSync(join(stateDir, "admin.key"), "utf8").trim();
    const read = await fetch(`${voter1.httpUrl}/v1/admin/admission`, {
      headers: { authorization: `Bearer ${adminKey}`, "user-agent": "capacity-audit/1.0" },
    });
    expect(read.status).toBe(200);
    await read.body?.cancel();
    const shown = async (): Promise<string> =>
      (await runCli(["logs", "voter1", "--state-dir", stateDir])).stdout;
    // The request's line is written once its answer has gone.
    await expect.poll(shown).toMatch(/route=\/v1\/admin\/admission .*userAgent=capacity-audit\/1\.0/);
    const logs = await shown();
    expect(logs).toMatch(/^voter1 +\| .*voter started/m);
    expect(logs).not.toContain("userAgent=keyload-apphost");
    const raw = await runCli(["logs", "voter1", "--raw", "--state-dir", stateDir]);
    expect(raw.stdout).toContain('"userAgent":"keyload-apphost"');
    expect(raw.stdout.split("\n").some((l) => JSON.parse(l).msg === "voter started")).toBe(true);
  });

  it("shows each voter's admission usage as used/limit in the status table", async () => {
    const table = await runCli(["status", "--state-dir", stateDir]);
    expect(table.exitCode, table.stderr).toBe(0);
    const [header, ...rows] = table.stdout.split("\n");
    expect(header).toMatch(/APPLIED +DATA LANE +CONTROL LANE +HTTP DATA +HTTP CONTROL +PID/);
    // The detached cluster's dashboard, as `status --json` gives its URL.
    expect(table.stdout).toMatch(/^dashboard: http:\/\/127\.0\.0\.1:\d+$/m);
    // The limits forwarded in beforeAll: MaxCommands 222 for all, MaxRequests 20, 5 and 9.
    for (const [voter, maxRequests] of [
      ["voter1", 20],
      ["voter2", 5],
      ["voter3", 9],
    ] as const) {
      const row = rows.find((r) => r.startsWith(`${voter} `));
      expect(row).toMatch(new RegExp(` 0/222 +0/\\d+ +\\d+/${maxRequests} +0/\\d+ +\\d+ +http://`));
    }
  });

  it("redraws the status every second until Ctrl-C, then ends cleanly", async () => {
    const watch = spawnCli(["status", "--watch", "--state-dir", stateDir]);
    let out = "";
    watch.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    const frames = (): string[] =>
      [...out.matchAll(/^Every 1 s: pnpm apphost status {2}(\S+)$/gm)].map((m) => m[1]!);
    try {
      const deadline = Date.now() + 15_000;
      while (frames().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      watch.kill("SIGINT");
      const result = await watch;
      expect(result.exitCode, String(result.stderr)).toBe(0);
      const [first, second] = frames().map((t) => Date.parse(t));
      expect(second! - first!).toBeGreaterThanOrEqual(900);
      expect(out).toMatch(/^voter1 +running +ready/m);
    } finally {
      watch.kill("SIGKILL");
    }
  });

  it("shows the last lines, or those of a recent period, of one voter or of all", async () => {
    const tail = await runCli(["logs", "voter1", "--tail", "4", "--state-dir", stateDir]);
    expect(tail.exitCode, tail.stderr).toBe(0);
    const lines = tail.stdout.split("\n");
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(line).toMatch(/^voter1 +\| /);
    const all = await runCli(["logs", "--tail", "5", "--raw", "--state-dir", stateDir]);
    expect(all.stdout.split("\n")).toHaveLength(5);

    const times = (stdout: string): { time: number; msg: string }[] =>
      stdout
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as { time: number; msg: string });
    const everything = times((await runCli(["logs", "voter3", "--raw", "--state-dir", stateDir])).stdout);
    const before = Date.now();
    const recent = await runCli(["logs", "voter3", "--raw", "--since", "1s", "--state-dir", stateDir]);
    expect(recent.exitCode, recent.stderr).toBe(0);
    // The voter has logged since it started, seconds ago: --since has lines to leave out.
    expect(everything.some((e) => e.time < before - 1_000)).toBe(true);
    for (const entry of times(recent.stdout)) expect(entry.time).toBeGreaterThanOrEqual(before - 1_000);
    const hour = times(
      (await runCli(["logs", "voter3", "--raw", "--since", "1h", "--state-dir", stateDir])).stdout,
    );
    expect(hour.some((e) => e.msg === "voter started")).toBe(true);
  });

  it("shows each voter's admission status, formatted or as the voters' own answers", async () => {
    const json = await runCli(["admission", "--json", "--state-dir", stateDir]);
    expect(json.exitCode, json.stderr).toBe(0);
    const raw = JSON.parse(json.stdout) as Record<string, AdmissionStatus>;
    expect(Object.keys(raw)).toEqual(["voter1", "voter2", "voter3"]);
    for (const [name, answer] of Object.entries(raw)) {
      expect(answer.nodeId).toBe(name);
      expect(Object.keys(answer).sort()).toEqual([
        "commandAdmission",
        "disk",
        "httpAdmission",
        "nodeId",
        "storageLimits",
      ]);
    }
    expect(raw.voter2!.httpAdmission.limits.maxRequests).toBe(5);

    const text = await runCli(["admission", "voter2", "--state-dir", stateDir]);
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^voter2 +http:\/\/127\.0\.0\.1:\d+$/m);
    expect(text.stdout).toMatch(/data +0\/222 commands, 0 B\/[\d.]+ \w+ retained, 0 queued, 0 active/);
    expect(text.stdout).toMatch(/data +\d+\/5 requests/);
    expect(text.stdout).toMatch(/disk +(ok|soft|hard): .+ free, reserve .+, floors /);
    expect(text.stdout).toMatch(/log cache .+, mmap .+, WAL /);
    expect(text.stdout).not.toContain("voter1");

    const leader = (await status()).voters.find((v) => v.role === "leader")!.name;
    const one = await runCli(["admission", "leader", "--json", "--state-dir", stateDir]);
    expect(one.exitCode, one.stderr).toBe(0);
    expect((JSON.parse(one.stdout) as AdmissionStatus).nodeId).toBe(leader);
  });

  it("hands leadership to a voter, which `leader` then names", async () => {
    const follower = (await status()).voters.find((v) => v.role === "follower")!.name;
    const moved = await runCli(["transfer-leader", follower, "--state-dir", stateDir]);
    expect(moved.exitCode, moved.stderr).toBe(0);
    expect(moved.stdout).toContain(`${follower} leads now`);
    expect((await status()).voters.find((v) => v.name === follower)!.role).toBe("leader");
    const again = await runCli(["transfer-leader", "leader", "--state-dir", stateDir]);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toContain(`${follower} already leads`);
  });

  it("refuses a second up on a running state dir", async () => {
    const again = await runCli(["up", "--detach", "--isolated", "--state-dir", stateDir]);
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toContain("AppHostClusterRunning");
  });

  it("replaces a voter by a new member that holds everything written before", async () => {
    const s = await status();
    const admin = new KeyLoadClient({
      endpoints: s.voters.map((v) => v.httpUrl),
      apiKey: readFileSync(s.adminKeyFile, "utf8").trim(),
    });
    try {
      await admin.put("before-replace", { n: 1 });
      const replace = await runCli(["replace", "voter2", "--state-dir", stateDir]);
      expect(replace.exitCode, replace.stderr).toBe(0);
      expect(replace.stdout).toContain("removed voter2 from the configuration");
      // The new member asks the leader to add it too: whichever asks first adds it.
      expect(replace.stdout).toMatch(
        /added voter2~[0-9a-f]{8} as a learner|voter2~[0-9a-f]{8} is a learner already/,
      );
      expect(replace.stdout).toMatch(/voter2 replaced: voter2~[0-9a-f]{8} is a voter in place of voter2/);
      const members = (await admin.clusterMembers()).members;
      expect(members.map((m) => [m.name, m.role]).sort()).toEqual([
        ["voter1", "voter"],
        ["voter2", "voter"],
        ["voter3", "voter"],
      ]);
      expect(members.find((m) => m.name === "voter2")!.memberId).toMatch(/^voter2~[0-9a-f]{8}$/);
      const voter2 = (await status()).voters[1]!;
      pids.push(voter2.pid!);
      expect((await admin.get("before-replace", { endpoint: voter2.httpUrl })).value).toEqual({ n: 1 });
    } finally {
      await admin.close();
    }
  });

  it("restarts a voter, then stops the cluster leaving no process", async () => {
    const before = (await status()).voters[2]!.pid!;
    const restart = await runCli(["restart", "voter3", "--state-dir", stateDir]);
    expect(restart.exitCode, restart.stderr).toBe(0);
    const after = (await status()).voters[2]!;
    expect(after.state).toBe("running");
    expect(after.pid).not.toBe(before);
    pids.push(after.pid!);

    const down = await runCli(["down", "--state-dir", stateDir]);
    expect(down.exitCode, down.stderr).toBe(0);
    expect(await survivors(pids, 2_000)).toEqual([]);
    const s = await status();
    expect(s.voters.map((v) => [v.state, v.pid])).toEqual([
      ["stopped", null],
      ["stopped", null],
      ["stopped", null],
    ]);
    for (const v of s.voters) {
      // No voter runs to say: each is what status last saw it be.
      expect(v).toMatchObject({ health: "unknown", member: "voter", commitIndex: null, appliedIndex: null });
    }
    const noLeader = await runCli(["kill", "leader", "--state-dir", stateDir]);
    expect(noLeader.exitCode).toBe(1);
    expect(noLeader.stderr).toContain("[AppHostNoLeader]");
    // A stopped voter cannot take over, which is said at once.
    const started = Date.now();
    const stopped = await runCli(["transfer-leader", "voter1", "--state-dir", stateDir]);
    expect(stopped.exitCode).toBe(1);
    expect(stopped.stderr).toContain("voter1 is not running");
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
