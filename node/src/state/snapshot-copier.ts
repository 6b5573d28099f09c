import type { Worker } from "node:worker_threads";
import { InternalError, InvalidArgumentError } from "@keyload/contract";
import type { AppliedPosition } from "./database.js";
import type { SnapshotCopyReply, SnapshotCopyRequest } from "./snapshot-protocol.js";
import { siblingModule, startWorker } from "./worker-thread.js";

interface Waiting {
  readonly resolve: (covered: AppliedPosition) => void;
  readonly reject: (error: Error) => void;
}

/**
 * Copies the state database for a snapshot on a worker thread, so the applying thread spends nothing
 * on it: the SQLite online backup (one step, from the worker's own read-only connection), the fsyncs
 * and the integrity check of the copy took 8 to 9 % of a busy leader's event loop there, in bursts
 * long enough to show in its p99. The worker starts with the first snapshot and stays for the next.
 */
export class SnapshotCopier {
  private worker: Worker | null = null;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;

  /** Copies `source` to `target` and returns the position the copy covers, read from the copy. */
  copy(source: string, target: string): Promise<AppliedPosition> {
    const worker = this.started();
    const id = this.nextId++;
    worker.ref();
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      const request: SnapshotCopyRequest = { id, source, target };
      worker.postMessage(request);
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker !== null) await worker.terminate();
    this.failAll("the state machine closed before the snapshot was taken");
  }

  private started(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = startWorker(siblingModule(import.meta.url, "snapshot-worker"), null);
    worker.on("message", (reply: SnapshotCopyReply) => this.settle(reply));
    worker.on("error", (error) => this.failAll(`the snapshot worker crashed: ${String(error)}`));
    worker.once("exit", () => {
      if (this.worker === worker) this.worker = null;
      this.failAll("the snapshot worker exited");
    });
    this.worker = worker;
    return worker;
  }

  private settle(reply: SnapshotCopyReply): void {
    const waiting = this.waiting.get(reply.id);
    if (waiting === undefined) return;
    this.waiting.delete(reply.id);
    // An idle worker does not keep the process alive.
    if (this.waiting.size === 0) this.worker?.unref();
    if (reply.ok) {
      waiting.resolve({ index: reply.index, term: reply.term });
    } else if (reply.reason === "InvalidSnapshot") {
      waiting.reject(new InvalidArgumentError(reply.message, { reason: "InvalidSnapshot" }));
    } else {
      waiting.reject(
        new InternalError(`the snapshot copy failed: ${reply.message}`, { reason: "SnapshotFailed" }),
      );
    }
  }

  private failAll(message: string): void {
    const error = new InternalError(message, { reason: "SnapshotFailed" });
    for (const waiting of this.waiting.values()) waiting.reject(error);
    this.waiting.clear();
  }
}
