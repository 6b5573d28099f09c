import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { StorageClosedError, StorageFailedError } from "./storage-errors.js";

/**
 * Plain CommonJS evaluated in the worker, so it needs no TypeScript loader or build step and runs the
 * same under vitest, tsx and the compiled package. Its own connection uses synchronous=FULL so the
 * checkpoint fsyncs the WAL before copying pages and the database file after.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma("synchronous = FULL");
parentPort.on("message", (msg) => {
  if (msg === "close") {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [r] = db.pragma("wal_checkpoint(PASSIVE)");
    parentPort.postMessage({ ok: true, log: r.log, checkpointed: r.checkpointed });
  } catch (err) {
    parentPort.postMessage({ ok: false, message: String(err && err.message ? err.message : err) });
  }
});
`;

interface CheckpointReply {
  readonly ok: boolean;
  readonly log?: number;
  readonly checkpointed?: number;
  readonly message?: string;
}

export interface CheckpointResult {
  /** Frames in the WAL when the checkpoint ran, and how many of them it copied into the database. */
  readonly log: number;
  readonly checkpointed: number;
}

/**
 * Copies the write-ahead log back into the database file from a worker thread. better-sqlite3 is
 * synchronous, so a checkpoint on the main thread (page copies and two fsyncs) would stall the event
 * loop far longer than one batch's fsync. A PASSIVE checkpoint takes no lock a writer waits on:
 * appends carry on while it runs, and SQLite restarts the WAL from its beginning at the first write
 * after a checkpoint that caught up.
 */
export class WalCheckpointer {
  private worker: Worker | null = null;
  private pending: {
    resolve: (r: CheckpointResult) => void;
    reject: (e: Error) => void;
  } | null = null;
  private failure: Error | null = null;
  private closed = false;

  constructor(private readonly dbPath: string) {}

  /** Runs one passive checkpoint; only one at a time. */
  checkpoint(): Promise<CheckpointResult> {
    if (this.closed) return Promise.reject(new StorageClosedError());
    if (this.failure) return Promise.reject(this.failure);
    if (this.pending) return Promise.reject(new StorageFailedError("a checkpoint is already running"));
    const worker = this.worker ?? this.start();
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      // Held while a checkpoint runs, since commits may be waiting on it (see DurableLogStore).
      worker.ref();
      worker.postMessage("checkpoint");
    });
  }

  /** Stops the worker after any running checkpoint; its connection closes before the store's. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    if (!worker) return;
    this.worker = null;
    const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
    worker.ref();
    worker.postMessage("close");
    await exited;
    this.pending?.reject(new StorageClosedError());
    this.pending = null;
  }

  private start(): Worker {
    const driver = createRequire(import.meta.url).resolve("better-sqlite3");
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver, path: this.dbPath } });
    // An idle worker never keeps the process alive.
    worker.unref();
    worker.on("message", (reply: CheckpointReply) => {
      worker.unref();
      const p = this.pending;
      this.pending = null;
      if (!p) return;
      if (reply.ok) p.resolve({ log: reply.log ?? 0, checkpointed: reply.checkpointed ?? 0 });
      else p.reject(this.fail(new StorageFailedError(`${this.dbPath}: checkpoint failed: ${reply.message}`)));
    });
    worker.on("error", (err) =>
      this.abort(new StorageFailedError(`${this.dbPath}: checkpointer`, { cause: err })),
    );
    worker.on("exit", () => {
      if (this.worker === worker) this.abort(new StorageFailedError(`${this.dbPath}: checkpointer exited`));
    });
    this.worker = worker;
    return worker;
  }

  private abort(err: Error): void {
    this.fail(err);
    this.worker = null;
    const p = this.pending;
    this.pending = null;
    p?.reject(err);
  }

  private fail(err: Error): Error {
    this.failure ??= err;
    return err;
  }
}
