import type { Worker } from "node:worker_threads";
import { startWorker } from "./worker-thread.js";

interface Waiting<Reply> {
  readonly resolve: (reply: Reply) => void;
  readonly reject: (error: Error) => void;
}

/**
 * Calls into a worker thread that answers each request with one reply carrying the request's `id`.
 * The worker starts with the first call and stays for the next; it keeps the process alive only while
 * a call is unanswered. A crash or exit of the worker fails every unanswered call with `failure`.
 */
export class WorkerCalls<Request, Reply extends { readonly id: number }> {
  private worker: Worker | null = null;
  private readonly waiting = new Map<number, Waiting<Reply>>();
  private nextId = 1;

  constructor(
    /** How errors name the worker: "the snapshot worker". */
    private readonly name: string,
    private readonly module: URL,
    private readonly workerData: unknown,
    private readonly failure: (message: string) => Error,
  ) {}

  /** Sends the request `build` makes with its ID; resolves with the worker's reply to it. */
  call(build: (id: number) => Request): Promise<Reply> {
    const worker = this.started();
    const id = this.nextId++;
    worker.ref();
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage(build(id));
    });
  }

  /** Sends a message that has no reply, provided the worker is running: a new one needs none. */
  tell(message: Request): void {
    this.worker?.postMessage(message);
  }

  async close(reason: string): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker !== null) await worker.terminate();
    this.failAll(reason);
  }

  private started(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = startWorker(this.module, this.workerData);
    worker.on("message", (reply: Reply) => this.settle(reply));
    worker.on("error", (error) => this.failAll(`${this.name} crashed: ${String(error)}`));
    worker.once("exit", () => {
      if (this.worker === worker) this.worker = null;
      this.failAll(`${this.name} exited`);
    });
    this.worker = worker;
    return worker;
  }

  private settle(reply: Reply): void {
    const waiting = this.waiting.get(reply.id);
    if (waiting === undefined) return;
    this.waiting.delete(reply.id);
    if (this.waiting.size === 0) this.worker?.unref();
    waiting.resolve(reply);
  }

  private failAll(message: string): void {
    const error = this.failure(message);
    for (const waiting of this.waiting.values()) waiting.reject(error);
    this.waiting.clear();
  }
}
