import { createServer, type Server, Socket } from "node:net";

/**
 * A loopback TCP relay a test puts between two voters, so it can stall or cut their connection at a
 * chosen moment the way a network does, without touching either voter.
 */
export class TcpProxy {
  /** Where accepted connections are relayed; set before the first connection arrives. */
  targetPort = 0;
  private held = false;
  private rewrite: ((chunk: Buffer) => Buffer) | null = null;
  private readonly pairs = new Set<[Socket, Socket]>();
  private readonly heldBytes = new Map<Socket, Buffer[]>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {
    server.on("connection", (client) => this.relay(client));
  }

  static async start(): Promise<TcpProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("the proxy has no TCP port");
    return new TcpProxy(server, address.port);
  }

  /** From now on bytes from the dialing side are kept back, as if the network lost them. */
  hold(): void {
    this.held = true;
  }

  /**
   * From now on every chunk the dialed side sends back passes through `fn` first, as a faulty network
   * or a buggy peer might alter it. A chunk is what one read returned, not a frame.
   */
  rewriteReplies(fn: (chunk: Buffer) => Buffer): void {
    this.rewrite = fn;
  }

  /** Bytes from the dialing side that `hold` kept back. */
  heldByteCount(): number {
    let n = 0;
    for (const chunks of this.heldBytes.values()) for (const c of chunks) n += c.length;
    return n;
  }

  /** Resets every relayed connection (both ends) and relays normally again. */
  cut(): void {
    this.held = false;
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
    this.heldBytes.clear();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private relay(client: Socket): void {
    const upstream = new Socket();
    const pair: [Socket, Socket] = [client, upstream];
    this.pairs.add(pair);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      this.pairs.delete(pair);
      this.heldBytes.delete(client);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    upstream.connect(this.targetPort, "127.0.0.1");
    client.on("data", (chunk: Buffer) => {
      if (!this.held) {
        upstream.write(chunk);
        return;
      }
      const kept = this.heldBytes.get(client) ?? [];
      kept.push(chunk);
      this.heldBytes.set(client, kept);
    });
    upstream.on("data", (chunk: Buffer) => {
      client.write(this.rewrite ? this.rewrite(chunk) : chunk);
    });
  }
}
