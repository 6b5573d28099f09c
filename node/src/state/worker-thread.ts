import { stat } from "node:fs";
import { Worker } from "node:worker_threads";

/**
 * Starts a worker thread on a module of this package. Built code runs the module directly; from the
 * TypeScript sources (tests, `tsx`) the worker first registers tsx's loader, which a worker does not
 * inherit from the thread that starts it.
 */
export function startWorker(module: URL, workerData: unknown): Worker {
  startThreadPool();
  if (!module.pathname.endsWith(".ts")) return new Worker(module, { workerData });
  const loader = import.meta.resolve("tsx/esm/api");
  const bootstrap = `import(${JSON.stringify(loader)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(module.href)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
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
