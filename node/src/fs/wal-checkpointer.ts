import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * Plain CommonJS evaluated in the worker, so it needs no TypeScript loader or build step and runs the
 * same under vitest, tsx and the compiled package. Each checkpoint opens its own connection and closes
 * it afterwards, so that no connection outlives a checkpoint: a database file replaced between two
 * checkpoints (a snapshot install) is never written through a connection to the old one. That
 * connection uses synchronous=FULL, so the checkpoint fsyncs the WAL before copying pages and the
 * database file after. `busy[0]` is 1 from the request until the connection is closed again.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const busy = new Int32Array(workerData.busy);
parentPort.on("message", (msg) => {
  if (msg === "close") {
    parentPort.close();
    return;
  }
  let reply;
  try {
    const db = new Database(workerData.path, { fileMustExist: true });
    try {
      db.pragma("synchronous = FULL");
      const [r] = db.pragma("wal_checkpoint(PASSIVE)");
      reply = { ok: true, log: r.log, checkpointed: r.checkpointed };
    } finally {
      db.close();
    }
  } catch (err) {
    reply = { ok: false, message: String(err && err.message ? err.message : err) };
  }
  Atomics.store(busy, 0, 0);
  Atomics.notify(busy, 0);
  parentPort.postMessage(reply);
});
`;

/** How long `waitIdle` waits for a running checkpoint: far longer than any checkpoint of a sane WAL. */
const IDLE_TIMEOUT_MS = 60_000;

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

/** A checkpoint failed, or was asked of a checkpointer that is closed or has failed. */
export class WalCheckpointError extends Error {
  readonly code: "WalCheckpointFailed" | "WalCheckpointerClosed";
  constructor(code: WalCheckpointError["code"], message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "WalCheckpointError";
    this.code = code;
  }
}

/**
 * Copies an SQLite write-ahead log back into its database file from a worker thread. better-sqlite3
 * is synchronous, so a checkpoint on the main thread (page copies and two fsyncs) would stall the
 * event loop far longer than one commit. A PASSIVE checkpoint takes no lock a writer waits on: commits
 * carry on while it runs, and SQLite restarts the WAL from its beginning at the first write
 * transaction that starts after a checkpoint that caught up.
 */
export class WalCheckpointer {
  private worker: Worker | null = null;
  private pending: {
    resolve: (r: CheckpointResult) => void;
    reject: (e: Error) => void;
  } | null = null;
  private failure: Error | null = null;
  private closed = false;
  private readonly busy = new Int32Array(new SharedArrayBuffer(4));

  constructor(private readonly dbPath: string) {}

  /** Runs one passive checkpoint; only one at a time. */
  checkpoint(): Promise<CheckpointResult> {
    if (this.closed) return Promise.reject(new WalCheckpointError("WalCheckpointerClosed", "closed"));
    if (this.failure) return Promise.reject(this.failure);
    if (this.pending) {
      return Promise.reject(
        new WalCheckpointError("WalCheckpointFailed", `${this.dbPath}: a checkpoint is already running`),
      );
    }
    const worker = this.worker ?? this.start();
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      Atomics.store(this.busy, 0, 1);
      // Held while a checkpoint runs, since commits may be waiting on it.
      worker.ref();
      worker.postMessage("checkpoint");
    });
  }

  /**
   * Blocks the calling thread until no checkpoint holds a connection to the database: for a caller
   * about to replace or close the file, which cannot wait asynchronously. Its reply still arrives.
   */
  waitIdle(timeoutMs = IDLE_TIMEOUT_MS): void {
    const deadline = performance.now() + timeoutMs;
    while (Atomics.load(this.busy, 0) === 1 && this.worker !== null) {
      // A worker that died mid-checkpoint never clears the flag, and its exit event cannot arrive
      // while this thread waits: give up rather than hang.
      const left = deadline - performance.now();
      if (left <= 0) {
        throw this.fail(
          new WalCheckpointError(
            "WalCheckpointFailed",
            `${this.dbPath}: a checkpoint did not finish in ${timeoutMs} ms`,
          ),
        );
      }
      Atomics.wait(this.busy, 0, 1, Math.min(50, left));
    }
  }

  /** Stops the worker after any running checkpoint. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    if (!worker) return;
    this.worker = null;
    const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
    worker.ref();
    worker.postMessage("close");
    await exited;
    this.pending?.reject(new WalCheckpointError("WalCheckpointerClosed", "closed"));
    this.pending = null;
  }

  private start(): Worker {
    const driver = createRequire(import.meta.url).resolve("better-sqlite3");
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver, path: this.dbPath, busy: this.busy.buffer },
    });
    // An idle worker never keeps the process alive.
    worker.unref();
    worker.on("message", (reply: CheckpointReply) => {
      worker.unref();
      const p = this.pending;
      this.pending = null;
      if (!p) return;
      if (reply.ok) p.resolve({ log: reply.log ?? 0, checkpointed: reply.checkpointed ?? 0 });
      else {
        p.reject(
          this.fail(
            new WalCheckpointError(
              "WalCheckpointFailed",
              `${this.dbPath}: checkpoint failed: ${reply.message}`,
            ),
          ),
        );
      }
    });
    worker.on("error", (err) =>
      this.abort(
        new WalCheckpointError("WalCheckpointFailed", `${this.dbPath}: checkpointer`, { cause: err }),
      ),
    );
    worker.on("exit", () => {
      if (this.worker === worker) {
        this.abort(new WalCheckpointError("WalCheckpointFailed", `${this.dbPath}: checkpointer exited`));
      }
    });
    this.worker = worker;
    return worker;
  }

  private abort(err: Error): void {
    this.fail(err);
    this.worker = null;
    Atomics.store(this.busy, 0, 0);
    const p = this.pending;
    this.pending = null;
    p?.reject(err);
  }

  private fail(err: Error): Error {
    this.failure ??= err;
    return err;
  }
}
