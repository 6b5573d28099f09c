import { fileURLToPath } from "node:url";
import { execa, type ResultPromise } from "execa";
import { isForwardingVariable } from "../config-forwarding.js";
import { isAlive, recordOf } from "../process-table.js";

/** The AppHost command line as `pnpm apphost` runs it. */
export const CLI = fileURLToPath(new URL("../../bin/keyload-apphost.mjs", import.meta.url));

/** The test process's environment without any KeyLoad or AppHost variable a developer may have set. */
function cleanEnvironment(extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !isForwardingVariable(name)) env[name] = value;
  }
  return { ...env, NO_COLOR: "1", ...extra };
}

export interface CliResult {
  readonly exitCode: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs one CLI command to its end. */
export async function runCli(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<CliResult> {
  const result = await execa(process.execPath, [CLI, ...args], {
    env: cleanEnvironment(env),
    extendEnv: false,
    reject: false,
    stdin: "ignore",
    timeout: 90_000,
  });
  return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

/** Starts a CLI command without waiting for it (`up` in the foreground). */
export function spawnCli(args: readonly string[], env: Readonly<Record<string, string>> = {}): ResultPromise {
  return execa(process.execPath, [CLI, ...args], {
    env: cleanEnvironment(env),
    extendEnv: false,
    reject: false,
    stdin: "ignore",
  });
}

/** The pids among `pids` whose processes are still alive after `timeoutMs`. */
export async function survivors(pids: readonly number[], timeoutMs: number): Promise<number[]> {
  const records = pids.map(recordOf);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const alive = records.filter(isAlive).map((r) => r.pid);
    if (alive.length === 0 || Date.now() >= deadline) return alive;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
