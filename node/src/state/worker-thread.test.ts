import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Worker } from "node:worker_threads";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { NODE_DIR } from "../build/test-fixtures/transpiled.js";
import { distTwin, workerTwin } from "./test-fixtures/transpiled-workers.js";
import { startWorker, startWorkersTranspiled } from "./worker-thread.js";

let dir: string;
beforeAll(() => {
  // Inside the package, so a probe resolves the workspace's packages as the package's own modules do.
  mkdirSync(join(NODE_DIR, ".test-dist"), { recursive: true });
  dir = mkdtempSync(join(NODE_DIR, ".test-dist", "worker-thread-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// The unit project's setup maps the worker modules to `dist`: put back after each test.
afterEach(() => startWorkersTranspiled(workerTwin));

/** A worker module that answers with what it was started as and where the contract resolves for it. */
function probe(name: string): URL {
  const path = join(dir, name);
  writeFileSync(
    path,
    `import { parentPort, workerData } from "node:worker_threads";
parentPort.postMessage({ module: import.meta.url, workerData, contract: import.meta.resolve("@keyload/contract") });`,
  );
  return pathToFileURL(path);
}

function firstMessage(worker: Worker): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  }).finally(() => worker.terminate()) as Promise<Record<string, unknown>>;
}

describe("startWorker", () => {
  it("starts a module of the sources on its transpiled twin, which imports the other packages' JavaScript", async () => {
    const twin = probe("twin.mjs");
    const source = new URL("./search-worker.ts", import.meta.url);
    startWorkersTranspiled((module) => (module.href === source.href ? twin : undefined));

    // This thread resolves the contract to its TypeScript (vitest's `source` condition); the twin must not.
    expect(import.meta.resolve("@keyload/contract")).toMatch(/\/contract\/src\/index\.ts$/);
    const reply = await firstMessage(startWorker(source, { n: 1 }));
    expect(reply).toEqual({
      module: twin.href,
      workerData: { n: 1 },
      contract: expect.stringMatching(/\/contract\/dist\/index\.js$/),
    });
  });

  it("starts built JavaScript as it is, whatever the twins", async () => {
    const built = probe("built.mjs");
    startWorkersTranspiled(() => {
      throw new Error("a built module has no twin");
    });
    const reply = await firstMessage(startWorker(built, null));
    expect(reply.module).toBe(built.href);
  });

  it("starts through tsx when the thread has a flag a worker takes only by inheritance", async () => {
    const twin = probe("twin.mjs");
    const source = probe("source.ts");
    startWorkersTranspiled((module) => (module.href === source.href ? twin : undefined));
    process.execArgv.push("--expose-gc");
    try {
      const reply = await firstMessage(startWorker(source, { n: 2 }));
      expect(reply).toMatchObject({ module: source.href, workerData: { n: 2 } });
    } finally {
      process.execArgv.pop();
    }
  });

  it("maps a module of src/ to dist/, and neither test fixtures nor anything outside src/", () => {
    const source = new URL("./search-worker.ts", import.meta.url);
    expect(fileURLToPath(distTwin(source) as URL)).toBe(join(NODE_DIR, "dist", "state", "search-worker.js"));
    expect(distTwin(new URL("./test-fixtures/apply-child.ts", import.meta.url))).toBeUndefined();
    expect(distTwin(pathToFileURL(join(NODE_DIR, "elsewhere.ts")))).toBeUndefined();
  });
});
