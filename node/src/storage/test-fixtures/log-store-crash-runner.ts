import { fork } from "node:child_process";
import { transpiledFixture } from "../../build/test-fixtures/transpiled.js";

const CHILD = new URL("./log-store-crash-child.ts", import.meta.url);

export interface ChildRun {
  /** The highest write number the child reported acknowledged (writes are acknowledged in order). */
  readonly acked: number;
  readonly done: boolean;
}

/**
 * Runs the durable log store's crash child (log-store-crash-child.ts) and SIGKILLs it `killAfterMs`
 * after it reports ready (or after it starts, when `early`). The child may also kill itself at a fault
 * point. Rejects if it dies any other way.
 */
export async function runLogStoreCrashChild(
  args: string[],
  kill?: { afterMs: number; early: boolean },
): Promise<ChildRun> {
  const script = await transpiledFixture(CHILD);
  return new Promise((resolve, reject) => {
    const child = fork(script, args, {
      execArgv: ["--enable-source-maps"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    let acked = 0;
    let done = false;
    const killLater = () => kill && setTimeout(() => child.kill("SIGKILL"), kill.afterMs);
    if (kill?.early) killLater();
    child.on("message", (msg: { ready?: boolean; acked?: number; done?: boolean }) => {
      if (msg.ready && !kill?.early) killLater();
      if (msg.acked !== undefined) acked = Math.max(acked, msg.acked);
      if (msg.done) done = true;
    });
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      if (signal === "SIGKILL" || (done && code === 0)) resolve({ acked, done });
      else reject(new Error(`crash child exited with code ${code}, signal ${signal}`));
    });
  });
}
