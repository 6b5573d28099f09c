import { type ChildProcess, spawn } from "node:child_process";
import { transpiledFixture } from "../../build/test-fixtures/transpiled.js";

/** How a crash test's child ended: killed (`signal`) or exited by itself (`code`). */
export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/**
 * Runs one of the state machine's crash children (apply-child.ts, install-child.ts or
 * log-apply-child.ts, in this folder) with `args`, handing each line it prints to `onLine` together
 * with the child, so the test can kill it at the moment it chooses. Resolves when the child is gone.
 */
export async function runStateMachineCrashChild(
  script: string,
  args: readonly string[],
  onLine: (line: string, child: ChildProcess) => void,
): Promise<ChildExit> {
  const child = spawn(
    process.execPath,
    ["--enable-source-maps", await transpiledFixture(new URL(`./${script}`, import.meta.url)), ...args],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  return new Promise((resolve, reject) => {
    let buffered = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      for (const line of lines) onLine(line, child);
    });
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve({ code, signal }));
  });
}
