import type { Socket } from "node:net";

/**
 * Makes the close that follows an answer to a request whose body was left unread a lingering one, as
 * nginx and Apache do. Closing a socket with unread bytes in its receive buffer makes the kernel send a
 * reset; a client still sending its body then fails its next write with EPIPE or ECONNRESET and may
 * never read the answer already on its way (a 413 would reach it as a lost connection). So the answer is
 * followed by this side's FIN while whatever the client still sends is read and dropped, until it closes
 * its side or `lingerMs` passes.
 *
 * Node's HTTP server ends a `connection: close` exchange by calling the socket's `destroySoon()` once
 * the answer is written; this socket's own `destroySoon` takes its place.
 */
export function lingerOnClose(socket: Socket, lingerMs: number): void {
  Object.defineProperty(socket, "destroySoon", {
    configurable: true,
    writable: true,
    value: () => linger(socket, lingerMs),
  });
}

function linger(socket: Socket, lingerMs: number): void {
  if (socket.destroyed) return;
  const timer = setTimeout(() => socket.destroy(), lingerMs);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
  // The client has sent all it will: nothing is left unread, so closing now sends no reset.
  socket.once("end", () => socket.destroy());
  socket.on("data", discard);
  socket.end();
}

function discard(): void {}
