import type { Worker } from "node:worker_threads";
import { InternalError } from "@keyload/contract";
import type { SqliteLimits } from "../fs/sqlite-limits.js";
import type {
  CatalogRead,
  CatalogReadWorkerData,
  FromCatalogReader,
  ToCatalogReader,
} from "./catalog-read-protocol.js";
import { JsonText } from "./json-text.js";
import { siblingModule, startWorker } from "./worker-thread.js";

interface Waiting {
  readonly resolve: (answer: JsonText) => void;
  readonly reject: (error: Error) => void;
}

/**
 * Answers bulk gets, queries, traversals and search hits' documents on a worker thread with its own
 * read-only connection, so a long scan or a large answer never holds the applying thread's event loop:
 * the worker reads the rows and builds the answer's JSON text, and this thread only sends it. The
 * worker starts with the first read and stays for the next; an idle one does not keep the process alive.
 *
 * The connection sees only what the applying connection has committed, which may trail what it has
 * applied (see ApplyCommits): the caller commits first (see StateMachine.readPage).
 */
export class CatalogReader {
  private worker: Worker | null = null;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;

  constructor(
    private readonly path: string,
    private readonly limits: SqliteLimits,
  ) {}

  read(read: CatalogRead): Promise<JsonText> {
    const worker = this.started();
    const id = this.nextId++;
    worker.ref();
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.send(worker, { type: "read", id, read });
    });
  }

  /** After the database file was replaced: reads sent from now on see the new file. */
  reopen(): void {
    if (this.worker !== null) this.send(this.worker, { type: "reopen" });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker !== null) await worker.terminate();
    this.failAll("the state machine closed before the read was answered");
  }

  private send(worker: Worker, message: ToCatalogReader): void {
    worker.postMessage(message);
  }

  private started(): Worker {
    if (this.worker !== null) return this.worker;
    const data: CatalogReadWorkerData = { path: this.path, limits: this.limits };
    const worker = startWorker(siblingModule(import.meta.url, "catalog-read-worker"), data);
    worker.on("message", (reply: FromCatalogReader) => this.settle(reply));
    worker.on("error", (error) => this.failAll(`the read worker crashed: ${String(error)}`));
    worker.once("exit", () => {
      if (this.worker === worker) this.worker = null;
      this.failAll("the read worker exited");
    });
    this.worker = worker;
    return worker;
  }

  private settle(reply: FromCatalogReader): void {
    const waiting = this.waiting.get(reply.id);
    if (waiting === undefined) return;
    this.waiting.delete(reply.id);
    if (this.waiting.size === 0) this.worker?.unref();
    if (reply.ok) waiting.resolve(new JsonText(reply.text));
    else waiting.reject(new InternalError(`the read failed: ${reply.message}`, { reason: "ReadFailed" }));
  }

  private failAll(message: string): void {
    const error = new InternalError(message, { reason: "ReadFailed" });
    for (const waiting of this.waiting.values()) waiting.reject(error);
    this.waiting.clear();
  }
}
