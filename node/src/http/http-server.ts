import { InternalError } from "@keyload/contract";
import { ClosingConnections } from "./closing-connections.js";
import { buildHttpApp, type HttpServerOptions } from "./http-app.js";

export interface HttpServer {
  /** Starts listening; port 0 takes a free port. Resolves with the address actually bound. */
  listen(host: string, port: number): Promise<{ readonly host: string; readonly port: number }>;
  /**
   * Stops accepting connections and waits for the requests in flight; requests that still arrive on
   * open connections meanwhile answer 503 Unavailable (ShuttingDown). Every answer from then on closes
   * its connection (ClosingConnections), so no client keeping one holds the close open.
   */
  close(): Promise<void>;
}

/** The voter's public HTTP server (contract sections 3-7), over the voter behind `options.service`. */
export function createHttpServer(options: HttpServerOptions): HttpServer {
  const closing = new ClosingConnections();
  const app = buildHttpApp(options, closing);
  return {
    async listen(host, port) {
      await app.listen({ host, port });
      const address = app.server.address();
      if (address === null || typeof address === "string") {
        throw new InternalError("the HTTP server is not listening on a TCP port");
      }
      return { host: address.address, port: address.port };
    },
    async close() {
      // At once: fastify's close begins a few ticks later, after the voter, shutting down, has answered
      // its queued commands in this same turn; those answers close their connections too.
      closing.begin();
      await app.close();
    },
  };
}
