import { type ChildProcess, spawn } from "node:child_process";
import { connect, type Socket } from "node:net";

/** Listens with room for one waiting connection, in a process of its own that it then stops. */
const LISTENER = `require("node:net").createServer().listen({ port: 0, host: "127.0.0.1", backlog: 1 }, function () {
  process.stdout.write(this.address().port + "\\n");
})`;

/** Connections that fill the stopped listener's queue; more than it can hold, to be sure. */
const FILLERS = 4;

/**
 * A loopback port whose connection attempts hang: its listener is stopped (SIGSTOP) with its accept
 * queue full, so the kernel drops each new SYN and the connecting side waits for its connect timeout.
 */
export class StalledListener {
  private constructor(
    readonly url: string,
    private readonly child: ChildProcess,
    private readonly fillers: readonly Socket[],
  ) {}

  static async start(): Promise<StalledListener> {
    const child = spawn(process.execPath, ["-e", LISTENER], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        child.once("error", reject);
        child.once("exit", (code) => reject(new Error(`the listener exited with ${code}`)));
        child.stdout!.once("data", (data: Buffer) => resolve(Number(String(data).trim())));
      });
      child.kill("SIGSTOP");
      const fillers = Array.from({ length: FILLERS }, () => connect(port, "127.0.0.1").on("error", () => {}));
      // The first connections complete into the queue; the rest already hang.
      await new Promise((resolve) => setTimeout(resolve, 100));
      return new StalledListener(`http://127.0.0.1:${port}`, child, fillers);
    } catch (error) {
      child.kill("SIGKILL");
      throw error;
    }
  }

  async close(): Promise<void> {
    for (const socket of this.fillers) socket.destroy();
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    this.child.kill("SIGKILL");
    await exited;
  }
}
