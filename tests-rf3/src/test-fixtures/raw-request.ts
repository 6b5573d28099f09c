import { connect, type Socket } from "node:net";

/** A response as it came off the wire. */
export interface RawResponse {
  readonly status: number;
  /** Header names lower-cased. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface RawRequestHead {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
}

const CRLF = "\r\n";

/**
 * One HTTP/1.1 request written byte by byte on a socket of its own, for the tests that need exact
 * framing the client would never send: a declared `Content-Length` whose body never comes, a chunked
 * body that grows past a cap, a request held open to keep its admission slot. The head goes out at
 * once; the body is what the test writes, when it writes it. `response` settles with the first
 * response read (or rejects if the connection ends without one).
 */
export class RawRequest {
  readonly response: Promise<RawResponse>;
  private readonly socket: Socket;
  private received = Buffer.alloc(0);

  private constructor(url: URL, head: RawRequestHead) {
    this.socket = connect({ host: url.hostname, port: Number(url.port) });
    // A server that answers early and closes makes the rest of the body fail to write: expected here.
    this.socket.on("error", () => {});
    this.response = new Promise<RawResponse>((resolve, reject) => {
      const onData = (chunk: Buffer): void => {
        this.received = Buffer.concat([this.received, chunk]);
        const parsed = parseResponse(this.received);
        if (parsed === undefined) return;
        this.socket.off("data", onData);
        resolve(parsed);
      };
      this.socket.on("data", onData);
      this.socket.once("close", () =>
        reject(new Error(`the connection closed before a whole response came: ${this.received}`)),
      );
    });
    // Settled by whoever awaits it; a test that only holds the slot never does.
    this.response.catch(() => {});
    const lines = [`${head.method} ${head.path} HTTP/1.1`, `host: ${url.host}`];
    for (const [name, value] of Object.entries(head.headers)) lines.push(`${name}: ${value}`);
    this.socket.write(`${lines.join(CRLF)}${CRLF}${CRLF}`);
  }

  /** Opens the connection and sends the request's head. */
  static send(baseUrl: string, head: RawRequestHead): RawRequest {
    return new RawRequest(new URL(baseUrl), head);
  }

  /** Writes body bytes as they are (the test frames them). Resolves once they are handed to the kernel. */
  write(bytes: string | Uint8Array): Promise<void> {
    return new Promise((resolve) => {
      if (this.socket.destroyed) {
        resolve();
        return;
      }
      this.socket.write(bytes, () => resolve());
    });
  }

  /** Writes one chunk of a chunked body; an empty one ends the body. */
  writeChunk(bytes: string | Uint8Array): Promise<void> {
    const size = typeof bytes === "string" ? Buffer.byteLength(bytes) : bytes.byteLength;
    if (size === 0) return this.write(`0${CRLF}${CRLF}`);
    return this.write(
      Buffer.concat([Buffer.from(`${size.toString(16)}${CRLF}`), Buffer.from(bytes), Buffer.from(CRLF)]),
    );
  }

  /** Whether the server has closed its side (or the socket is gone). */
  get closed(): boolean {
    return this.socket.destroyed || this.socket.readableEnded;
  }

  /** Hangs up, whatever state the request is in. */
  close(): void {
    this.socket.destroy();
  }
}

/** The response in `bytes`, or undefined while it is incomplete. */
function parseResponse(bytes: Buffer): RawResponse | undefined {
  const end = bytes.indexOf(`${CRLF}${CRLF}`);
  if (end < 0) return undefined;
  const [statusLine, ...headerLines] = bytes.subarray(0, end).toString("latin1").split(CRLF);
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? "")?.[1]);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = bytes.subarray(end + 4);
  if (headers["transfer-encoding"] === "chunked") {
    const body = dechunk(rest);
    return body === undefined ? undefined : { status, headers, body };
  }
  const length = Number(headers["content-length"] ?? 0);
  if (rest.length < length) return undefined;
  return { status, headers, body: rest.subarray(0, length).toString("utf8") };
}

function dechunk(bytes: Buffer): string | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf(CRLF, at);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString("latin1"), 16);
    if (size === 0) return Buffer.concat(parts).toString("utf8");
    if (bytes.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
