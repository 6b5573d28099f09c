/**
 * The control prober: one small control write every `intervalMs`, on a fixed schedule (a slow answer
 * does not delay the next one), from a child process of its own, so that the flood this process drives
 * does not hold up the prober's timers or its reading of answers. KeyLoad's control write is
 * `POST /v1/dispatch/{channel}` from its own principal; etcd's is a small put.
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";

export interface ControlSpec {
  readonly system: "keyload" | "etcd";
  /** The voter or member it writes to. */
  readonly origin: string;
  /** KeyLoad only. */
  readonly apiKey?: string;
  readonly intervalMs: number;
  /** Makes command IDs and keys unique to this prober. */
  readonly tag: string;
}

/** The start of a run that `settledLatencies` leave out: a flood's connection storm. */
export const SETTLE_MS = 2_000;

export type ControlRequest = { readonly type: "run"; readonly seconds: number } | { readonly type: "exit" };

export type ControlReply =
  | { readonly type: "ready" }
  | { readonly type: "result"; readonly result: ControlResult }
  | { readonly type: "failed"; readonly message: string };

export interface ControlResult {
  readonly sent: number;
  /** Milliseconds from sending to the end of the answer, of the 2xx answers. */
  readonly latencies: readonly number[];
  /** The same, of the writes sent once the run's first `SETTLE_MS` had passed. */
  readonly settledLatencies: readonly number[];
  /**
   * Connections the prober opened during the run: it opens one when every open one is busy, and
   * a new connection waits for the server's accept behind any others queued there.
   */
  readonly newConnections: number;
  /** Anything but a 2xx answer, by kind. */
  readonly errors: Record<string, number>;
  /** The prober's own worst timer lateness in ms: how late it was to send on schedule. */
  readonly maxLateMs: number;
}

export class ControlProber {
  private constructor(private readonly child: ChildProcess) {}

  /** Starts the prober and waits until its first control write has been answered. */
  static async start(spec: ControlSpec): Promise<ControlProber> {
    const child = fork(fileURLToPath(new URL("./overload-control-worker.ts", import.meta.url)), [], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const prober = new ControlProber(child);
    child.send(spec);
    const reply = await prober.next();
    if (reply.type !== "ready") {
      prober.kill();
      throw new Error(
        `the control prober did not start: ${reply.type === "failed" ? reply.message : reply.type}`,
      );
    }
    return prober;
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  /** Probes for `seconds`, then waits for the answers still outstanding. */
  async run(seconds: number): Promise<ControlResult> {
    const reply = this.next();
    this.child.send({ type: "run", seconds } satisfies ControlRequest);
    const answer = await reply;
    if (answer.type !== "result") {
      throw new Error(
        `the control prober failed: ${answer.type === "failed" ? answer.message : answer.type}`,
      );
    }
    return answer.result;
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    if (this.child.connected) this.child.send({ type: "exit" } satisfies ControlRequest);
    const timer = setTimeout(() => this.kill(), 3000);
    await exited;
    clearTimeout(timer);
  }

  private next(): Promise<ControlReply> {
    return new Promise((resolve) => {
      const onMessage = (message: ControlReply): void => {
        this.child.off("exit", onExit);
        resolve(message);
      };
      const onExit = (code: number | null, signal: string | null): void => {
        this.child.off("message", onMessage);
        resolve({ type: "failed", message: `exited (${signal ?? code})` });
      };
      this.child.once("message", onMessage);
      this.child.once("exit", onExit);
    });
  }
}
