import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { NODE_DIR, transpiledVoter } from "../../build/test-fixtures/transpiled.js";

/**
 * A voter as a process of its own, run as the AppHost runs it (the sources transpiled), so that SIGKILL lands
 * anywhere: mid-fsync, between an fsync and its acknowledgement, inside an apply or a snapshot.
 * `env` holds its `KeyLoad__...` settings. Resolves once the process listens on its HTTP port and
 * answers `/health/live`; readiness (a known leader) is the caller's to wait for.
 */
export async function startVoterProcess(
  env: Record<string, string>,
  timeoutMs = 30_000,
): Promise<ChildProcess> {
  const proc = spawn(process.execPath, ["--enable-source-maps", await transpiledVoter()], {
    cwd: NODE_DIR,
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, ...env },
  });
  let stderr = "";
  proc.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const url = `http://127.0.0.1:${env.KeyLoad__Node__HttpPort}`;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`the voter exited with ${proc.exitCode}: ${stderr}`);
    if ((await statusOf(`${url}/health/live`)) === 200) return proc;
    await sleep(50);
  }
  proc.kill("SIGKILL");
  throw new Error(`the voter did not answer /health/live within ${timeoutMs} ms: ${stderr}`);
}

/** Polls `url` until it answers 200, or throws after `timeoutMs`. */
export async function waitFor200(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await statusOf(url)) === 200) return;
    await sleep(50);
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
}

/** Sends `signal` and resolves once the process is gone (at once if it already is). */
export function killProcess(proc: ChildProcess, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
  // A process ended by a signal keeps exitCode null; signalCode says it is gone.
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  proc.kill(signal);
  return exited;
}

async function statusOf(url: string): Promise<number> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}
