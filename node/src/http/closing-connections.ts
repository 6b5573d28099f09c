import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/**
 * Lets go of the public port's keep-alive connections once its close has begun, so a client that keeps
 * reusing one (a health poller) cannot hold the voter's shutdown open.
 *
 * Fastify's close leaves this to Node: `server.close()` closes the connections idle at that moment
 * (Node 19 and later; fastify's `forceCloseConnections` default, "idle", calls nothing more itself
 * unless given a server factory) and waits for the others. A connection busy then went back to
 * keep-alive after its answer, and each request the client sent on it after was answered too (503),
 * keep-alive again: the close waited until the client stopped and the keep-alive timeout ran out.
 * Once closing, every answer therefore asks the client to close the connection after it
 * (`Connection: close`), and a connection answered keep-alive anyway (its head written before the
 * close began) is closed as soon as it is idle.
 */
export class ClosingConnections {
  private closing = false;
  private server: Server | undefined;
  /** How many requests each connection has sent so far. */
  private readonly received = new WeakMap<Socket, number>();
  /**
   * Each request's place among its connection's (from 1): one whose place is below the count has
   * another behind it. Counts, not the latest request itself, which an idle connection would keep.
   */
  private readonly places = new WeakMap<IncomingMessage, number>();
  /** Requests received once the close had begun. */
  private readonly late = new WeakSet<IncomingMessage>();
  /** The place of the request after whose answer a connection closes, its body left unread. */
  private readonly closesAfter = new WeakMap<Socket, number>();

  /** Whether the close has begun: new requests are refused (ShuttingDown). */
  get begun(): boolean {
    return this.closing;
  }

  /** Follows the requests of `server`, the one server these connections are of. */
  watch(server: Server): void {
    this.server = server;
    const closing = this;
    // One function shared by every response, not a closure per request: this runs on every request.
    function finished(this: ServerResponse): void {
      closing.finished(this);
    }
    // Ahead of fastify's own listener, which may answer before a later listener would run.
    server.prependListener("request", (request: IncomingMessage, response: ServerResponse) => {
      const place = (this.received.get(request.socket) ?? 0) + 1;
      this.received.set(request.socket, place);
      this.places.set(request, place);
      if (this.closing) this.late.add(request);
      response.on("finish", finished);
    });
  }

  /** Begins the close; idempotent. */
  begin(): void {
    this.closing = true;
  }

  /**
   * Called as the head of `response` is about to be written: once closing, it asks the client to close
   * the connection after it. But for an answer to a request from before the close with another request
   * already behind it on its connection (pipelined): the connection stays for that one, which may be a
   * write under way, and closes after its answer. An answer to a request received after the close began
   * always closes it, so however many a client pipelines, the connection closes after the first of them.
   */
  closeAfter(request: IncomingMessage, response: ServerResponse): void {
    if (!this.closing || response.headersSent) return;
    if (!this.late.has(request) && this.hasRequestBehind(request)) return;
    response.setHeader("connection", "close");
  }

  private finished(response: ServerResponse): void {
    if (!this.closing || this.server === undefined) return;
    if (String(response.getHeader("connection")).toLowerCase() === "close") return;
    // Answered keep-alive while closing: its head went out before the close began, or a request is
    // pipelined behind it, whose answer closes the connection.
    if (this.hasRequestBehind(response.req)) return;
    // Node closes only the idle ones: not one whose next request is arriving, which is answered 503.
    this.server.closeIdleConnections();
  }

  /**
   * Whether `request`'s connection may close after its answer, its body left unread. Not when another
   * request is behind it already: the parser reached that one's head only past this body, so the body
   * arrived whole. Once decided, the requests that come behind it are not run (`isBehindClose`).
   */
  closeAfterUnreadBody(request: IncomingMessage): boolean {
    if (this.hasRequestBehind(request)) return false;
    const place = this.places.get(request);
    if (place !== undefined) this.closesAfter.set(request.socket, place);
    return true;
  }

  /**
   * Whether `request` came on its connection behind an answer that closes it: its own answer would
   * never be written, so it must not be carried out (RFC 9112, section 9.6).
   */
  isBehindClose(request: IncomingMessage): boolean {
    const at = this.closesAfter.get(request.socket);
    return at !== undefined && (this.places.get(request) ?? 0) > at;
  }

  /** Whether `request`'s connection has sent another request after it; false for one never seen. */
  private hasRequestBehind(request: IncomingMessage): boolean {
    const place = this.places.get(request);
    return place !== undefined && place < (this.received.get(request.socket) ?? 0);
  }
}
