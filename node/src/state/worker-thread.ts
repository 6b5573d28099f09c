import { stat } from "node:fs";
import { Worker } from "node:worker_threads";

let transpiledTwin: ((source: URL) => URL | undefined) | undefined;

/**
 * Starts a worker thread on a module of this package. Built code runs the module directly; from the
 * TypeScript sources the worker runs the module's transpiled twin when one was declared (tests, see
 * `startWorkersTranspiled`), else it first registers tsx's loader, which a worker does not inherit from
 * the thread that starts it.
 */
export function startWorker(module: URL, workerData: unknown): Worker {
  startThreadPool();
  if (!module.pathname.endsWith(".ts")) return new Worker(module, { workerData });
  const twin = transpiledTwin?.(module);
  if (twin !== undefined) {
    try {
      return new Worker(twin, { workerData, execArgv: withoutConditions(process.execArgv) });
    } catch (err) {
      // A flag a worker takes only by inheritance (`--expose-gc`, `--max-old-space-size`): through tsx,
      // which inherits them all.
      if ((err as NodeJS.ErrnoException).code !== "ERR_WORKER_INVALID_EXEC_ARGV") throw err;
    }
  }
  const loader = import.meta.resolve("tsx/esm/api");
  const bootstrap = `import(${JSON.stringify(loader)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(module.href)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/**
 * From the TypeScript sources, workers start on the JavaScript `twin` maps their module to (undefined, or
 * no `twin`: through tsx), which the caller keeps current with the sources. Through tsx each worker first
 * spends over a second of CPU on tsx and its loader thread, and almost every state machine a test opens
 * starts one.
 */
export function startWorkersTranspiled(twin: ((source: URL) => URL | undefined) | undefined): void {
  transpiledTwin = twin;
}

/**
 * The thread's flags less its export conditions: a transpiled twin imports the other packages' JavaScript
 * too, not the TypeScript the `source` condition names.
 */
function withoutConditions(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const flag = execArgv[i] as string;
    if (flag === "--conditions" || flag === "-C") i++;
    else if (!flag.startsWith("--conditions=")) kept.push(flag);
  }
  return kept;
}

/** The URL of a sibling module, with the extension this module itself was loaded with (.ts or .js). */
export function siblingModule(base: string, name: string): URL {
  return new URL(`./${name}${base.endsWith(".ts") ? ".ts" : ".js"}`, base);
}

/**
 * Makes sure libuv's thread pool exists, created by this thread. A new thread takes the nice value of
 * the thread that creates it, and libuv creates its pool (every async fs call of the process, the
 * log's fsyncs off the event loop) on the first work any thread queues: queued first from the snapshot
 * worker, which lowers its own priority, the whole pool ran at nice +10 (seen on Node 22, where nothing
 * in the process had used the pool before the first snapshot).
 */
function startThreadPool(): void {
  stat(".", () => {});
}
