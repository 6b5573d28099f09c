import type { Server, Socket } from "node:net";

/**
 * The most connections the public port holds open by default (`KeyLoad:Connections:MaxHttp`): far
 * above what a few clients' keep-alive pools take (16 per client by default), yet a bound on the
 * sockets, buffers and file descriptors that a flood of idle connections could otherwise take.
 */
export const DEFAULT_MAX_HTTP_CONNECTIONS = 4096;

/**
 * The public port's connection cap and its counts. The cap is Node's own `server.maxConnections`:
 * a connection past it is closed as soon as it is accepted, before any TLS handshake or byte of HTTP,
 * so an excess costs the voter next to nothing.
 */
export class HttpConnections {
  private openCount = 0;
  private refusedCount = 0;

  /** Connections open now, TLS handshakes in progress included. */
  get open(): number {
    return this.openCount;
  }

  /** Connections closed at once since the start, for being over the cap. */
  get refused(): number {
    return this.refusedCount;
  }

  /** Caps `server` at `max` open connections and counts them; a server is watched once. */
  watch(server: Server, max: number): void {
    server.maxConnections = max;
    // The raw TCP socket, for HTTPS too: counted from accept to close, handshake included.
    server.on("connection", (socket: Socket) => {
      this.openCount++;
      socket.once("close", () => {
        this.openCount--;
      });
    });
    server.on("drop", () => {
      this.refusedCount++;
    });
  }
}
