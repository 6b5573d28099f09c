import type { Message } from "../../raft/types.js";
import type { RaftTransport } from "../../voter/raft-transport.js";

/**
 * One process life's end of the simulated network, as a driver's RaftTransport. What it sends goes to
 * `post` at once: the network's delays, losses and cuts stand for the transport's corking and its
 * connections. A snapshot chunk's bytes are copied before they are released, since the sender reuses
 * its buffers (a Buffer's `slice` would share them).
 */
export class SimTransport implements RaftTransport {
  private handler: ((message: Message) => void) | null = null;

  constructor(private readonly post: (message: Message) => void) {}

  send(message: Message, released?: () => void): void {
    const m =
      message.type === "snapshot-chunk" && message.data !== null
        ? { ...message, data: new Uint8Array(message.data) }
        : message;
    released?.();
    this.post(m);
  }

  flush(): void {}

  onMessage(handler: (message: Message) => void): void {
    this.handler = handler;
  }

  /** Hands a delivered message to the driver; false when no driver listens (not started yet). */
  deliver(message: Message): boolean {
    if (this.handler === null) return false;
    this.handler(message);
    return true;
  }
}
