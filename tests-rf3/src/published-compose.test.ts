import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { VOTER_NAMES, type VoterName } from "@keyload/apphost/testing";
import { KeyLoadClient } from "@keyload/client";
import { describe, expect, it, onTestFinished } from "vitest";
import { waitUntil } from "./test-fixtures/wait-until.js";

/**
 * `pnpm apphost publish --target compose`, deployed: the image built from the published context on the
 * local engine, the three voters run by docker-compose from the published compose.yaml, and the smoke
 * subset run against them through the client. No AppHost runs this cluster, so faults are the engine's:
 * a voter's container is killed and started again.
 */

// CI starts a Docker engine and sets this: there the test fails rather than skips without the engine
// or docker-compose (which .ci/run installs), as the browser test does without chromium.
const required = process.env.KEYLOAD_REQUIRE_CONTAINER_RUNTIME === "1";
const CLI = fileURLToPath(new URL("../../apphost/bin/keyload-apphost.mjs", import.meta.url));

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function run(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { ...options, maxBuffer: 64 * 1024 * 1024, timeout: 240_000 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : 127;
        resolve({ code, stdout: stdout.trim(), stderr: stderr.trim() });
      },
    );
  });
}

async function engineUnavailable(): Promise<string | undefined> {
  const engine = await run("docker", ["version", "--format", "{{.Server.Version}}"]);
  return engine.code === 0
    ? undefined
    : `no Docker engine answers: ${engine.stderr || "docker is not installed"}`;
}
async function composeUnavailable(): Promise<string | undefined> {
  const compose = await run("docker-compose", ["version", "--short"]);
  return compose.code === 0 ? undefined : "docker-compose is not installed (apt-get install docker-compose)";
}
const [noEngine, noCompose] = await Promise.all([engineUnavailable(), composeUnavailable()]);
const unavailable = noCompose ?? noEngine;
if (required && noCompose !== undefined)
  throw new Error(`KEYLOAD_REQUIRE_CONTAINER_RUNTIME=1, but ${noCompose}`);

/** Whether a port is free on every interface (the voters bind HTTP on 0.0.0.0) and on loopback. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "0.0.0.0", () => server.close(() => resolve(true)));
  });
}

/** voter1's HTTP and peer ports, each with the next two free too: the voters share the host's network. */
async function freePortBases(): Promise<{ httpPort: number; peerPort: number }> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 20_000);
    const ports = [0, 1, 2, 100, 101, 102].map((offset) => base + offset);
    if ((await Promise.all(ports.map(isFree))).every(Boolean))
      return { httpPort: base, peerPort: base + 100 };
  }
}

interface Ready {
  readonly ready: boolean;
  readonly role?: string;
  readonly leader?: string | null;
  readonly memberId?: string;
}

async function readiness(url: string): Promise<Ready | undefined> {
  try {
    const response = await fetch(`${url}/health/ready`, { signal: AbortSignal.timeout(1_000) });
    const body = (await response.json()) as { detail?: Ready; error?: { details?: Ready } };
    const detail = body.detail ?? body.error?.details;
    return { ...detail, ready: response.status === 200 };
  } catch {
    return undefined;
  }
}

describe.skipIf(unavailable !== undefined && !required)(
  `the published compose output${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    it("builds, bootstraps one cluster, commits writes through each voter and survives the leader's kill", {
      timeout: 360_000,
    }, async () => {
      const work = mkdtempSync(join(tmpdir(), "keyload-published-"));
      const out = join(work, "deploy");
      const suffix = randomBytes(4).toString("hex");
      const imageName = `keyload-voter:rf3-${suffix}`;
      const project = `keyloadrf3${suffix}`;
      const env = { ...process.env, KEYLOAD_VOTER_IMAGE: imageName };
      const compose = (...args: string[]) =>
        run("docker-compose", ["--project-name", project, "--file", join(out, "compose.yaml"), ...args], {
          cwd: out,
          env,
        });
      // Registered first, so it runs however the test ends: containers, volumes, image, files.
      onTestFinished(async () => {
        const down = existsSync(join(out, "compose.yaml"))
          ? await compose("down", "--volumes", "--remove-orphans", "--timeout", "5")
          : undefined;
        const image = await run("docker", ["image", "ls", "--quiet", imageName]);
        const rmi =
          image.stdout === "" ? undefined : await run("docker", ["image", "rm", "--force", imageName]);
        rmSync(work, { recursive: true, force: true });
        expect(down?.code ?? 0, down?.stderr).toBe(0);
        expect(rmi?.code ?? 0, rmi?.stderr).toBe(0);
        const left = await run("docker", [
          "ps",
          "--all",
          "--quiet",
          "--filter",
          `label=com.docker.compose.project=${project}`,
        ]);
        expect(left.stdout).toBe("");
        const volumes = await run("docker", [
          "volume",
          "ls",
          "--quiet",
          "--filter",
          `label=com.docker.compose.project=${project}`,
        ]);
        expect(volumes.stdout).toBe("");
      });

      const ports = await freePortBases();
      const published = await run(
        process.execPath,
        [
          CLI,
          ...["publish", "--target", "compose", "--out", out, "--build", "--image", imageName],
          ...["--http-port", String(ports.httpPort), "--peer-port", String(ports.peerPort)],
        ],
        {
          env: {
            ...process.env,
            // Forwarded as the AppHost forwards them: to all voters, and to voter2 alone.
            KeyLoad__Raft__ElectionTimeoutMs: "400",
            KeyLoad__Raft__HeartbeatIntervalMs: "50",
            AppHost__Voters__voter2__KeyLoad__CommandAdmission__MaxCommands: "200",
          },
        },
      );
      expect(published.code, `${published.stdout}\n${published.stderr}`).toBe(0);
      expect(published.stdout).toContain(`Built image ${imageName}`);

      const up = await compose("up", "--detach");
      expect(up.code, up.stderr).toBe(0);
      const urls = Object.fromEntries(
        VOTER_NAMES.map((voter, i) => [voter, `http://127.0.0.1:${ports.httpPort + i}`]),
      ) as Record<VoterName, string>;
      const containerOf = async (voter: VoterName) => (await compose("ps", "--quiet", voter)).stdout;

      /** Every voter ready, all following one leader, which itself says it leads; returns its name. */
      const oneLeader = (among: readonly VoterName[] = VOTER_NAMES) =>
        waitUntil(
          `one leader among ${among.join(", ")}, all ready`,
          async (seen) => {
            const states = await Promise.all(among.map((v) => readiness(urls[v])));
            seen(states);
            const leaders = new Set(states.map((s) => s?.leader));
            const leader = [...leaders][0];
            if (!states.every((s) => s?.ready) || leaders.size !== 1 || typeof leader !== "string")
              return undefined;
            const own = states[among.indexOf(leader as VoterName)];
            return own?.role === "leader" ? (leader as VoterName) : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 250 },
        );
      const leader = await oneLeader();
      for (const voter of VOTER_NAMES) {
        // Its own name, not a new member's incarnation: each bootstrapped on its first start.
        expect((await readiness(urls[voter]))?.memberId).toBe(voter);
      }
      // The compose file's health checks, run by the engine with the image's own Node.js.
      await waitUntil(
        "every container to be healthy",
        async (seen) => {
          const ids = await Promise.all(VOTER_NAMES.map(containerOf));
          const health = await run("docker", ["inspect", "--format", "{{.State.Health.Status}}", ...ids]);
          seen(health.stdout);
          return health.stdout.split("\n").every((s) => s === "healthy") ? true : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 500 },
      );

      const apiKey = readFileSync(join(out, "secrets", "admin_key"), "utf8").trim();
      const client = new KeyLoadClient({ endpoints: VOTER_NAMES.map((v) => urls[v]), apiKey });
      onTestFinished(() => client.close());
      // The forwarded settings reached the voters.
      expect(
        (await client.admissionStatus({ endpoint: urls.voter2 })).commandAdmission.limits.maxCommands,
      ).toBe(200);
      expect(
        (await client.admissionStatus({ endpoint: urls.voter1 })).commandAdmission.limits.maxCommands,
      ).toBe(256);

      // A write through each voter (a follower forwards it to the leader), read back from every voter.
      for (const voter of VOTER_NAMES) {
        await client.put(`through-${voter}`, { voter }, { endpoint: urls[voter] });
      }
      for (const reader of VOTER_NAMES) {
        for (const voter of VOTER_NAMES) {
          expect((await client.get(`through-${voter}`, { endpoint: urls[reader] })).value).toEqual({ voter });
        }
      }

      // The leader's container is killed: the other two elect a leader and go on committing.
      const killed = await run("docker", ["kill", await containerOf(leader)]);
      expect(killed.code, killed.stderr).toBe(0);
      const others = VOTER_NAMES.filter((v) => v !== leader);
      const successor = await oneLeader(others);
      expect(successor).not.toBe(leader);
      await client.put("while-killed", 1, { endpoint: urls[successor] });

      // Started again on its volume: it rejoins as itself, catches up, and the three serve again.
      const started = await compose("start", leader);
      expect(started.code, started.stderr).toBe(0);
      await oneLeader();
      expect((await readiness(urls[leader]))?.memberId).toBe(leader);
      expect((await client.get("while-killed", { endpoint: urls[leader] })).value).toBe(1);
      await client.put("after-restart", 2, { endpoint: urls[leader] });
      expect((await client.get("after-restart")).value).toBe(2);

      const logs = await compose("logs", "--no-color", leader);
      // Bootstrapped once, on its first start only.
      expect(logs.stdout.match(/bootstrapping cluster/g)).toHaveLength(1);
    });
  },
);
