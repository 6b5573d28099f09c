import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CLI, runCli, spawnCli } from "./test-fixtures/cli-process.js";

/** The AppHost as a shell runs it: its output piped, its terminal closed, pnpm's `--` passed on. */

let stateDir: string;

beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), "keyload-cli-pipes-"));
  mkdirSync(join(stateDir, "logs"));
  const line = JSON.stringify({ level: 30, time: 1, nodeId: "voter1", msg: "x".repeat(80) });
  writeFileSync(join(stateDir, "logs", "voter1.log"), `${line}\n`.repeat(60_000));
});

afterEach(() => {
  rmSync(stateDir, { recursive: true, force: true });
});

describe("the AppHost in a pipeline", () => {
  it("ends quietly when the reader of its output goes away", async () => {
    const script = `"${process.execPath}" "${CLI}" logs --raw --state-dir "${stateDir}" 2>"${stateDir}/err" | head -1; echo "exit \${PIPESTATUS[0]}"; cat "${stateDir}/err"`;
    const { stdout } = await execa("bash", ["-c", script], { env: { ...process.env, NO_COLOR: "1" } });
    const [first, exit, ...stderr] = stdout.split("\n");
    expect(first).toContain('"voter1"');
    expect(exit).toBe("exit 0");
    expect(stderr.join("\n")).toBe("");
  });

  it("stops following logs when its terminal closes (SIGHUP), as on Ctrl-C", async () => {
    writeFileSync(join(stateDir, "logs", "voter1.log"), `${JSON.stringify({ nodeId: "voter1" })}\n`);
    const follow = spawnCli(["logs", "--follow", "--raw", "--state-dir", stateDir]);
    try {
      let seen = "";
      follow.stdout?.on("data", (chunk: Buffer) => {
        seen += chunk.toString();
      });
      const deadline = Date.now() + 20_000;
      while (!seen.includes('"voter1"') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      // Following starts right after the lines already there are printed.
      await new Promise((r) => setTimeout(r, 500));
      follow.kill("SIGHUP");
      const result = await follow;
      expect(result.signal).toBeUndefined();
      expect(result.exitCode, String(result.stderr)).toBe(0);
    } finally {
      follow.kill("SIGKILL");
    }
  });

  it("names a state dir that does not exist instead of printing no logs", async () => {
    const missing = join(stateDir, "no-such-dir");
    const result = await runCli(["logs", "--state-dir", missing]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(`there is no state dir ${missing}`);
    expect(result.stderr).toContain("[AppHostNoCluster]");
  });

  it("takes a `--` pnpm passes on before the command", async () => {
    // The package script puts its own `--` first; pnpm passes the user's on after it.
    const result = await runCli(["--", "--", "status", "--json", "--state-dir", stateDir]);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ stateDir });
  });
});
