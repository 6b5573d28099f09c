import { connect, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

export interface RawResponse {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Parses one HTTP/1.1 response with a Content-Length body out of what a socket received. */
export function parseResponse(raw: string): RawResponse {
  const split = raw.indexOf("\r\n\r\n");
  if (split < 0) throw new Error(`no complete response head in ${JSON.stringify(raw.slice(0, 200))}`);
  const [statusLine, ...lines] = raw.slice(0, split).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers["content-length"] ?? 0);
  return {
    statusCode: Number(statusLine?.split(" ")[1]),
    headers,
    body: raw.slice(split + 4, split + 4 + length),
  };
}

/** Opens a connection to the loopback port. */
export function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Everything `socket` receives, and when the server has closed it (or it failed). */
export function collect(socket: Socket): { readonly closed: Promise<void>; received(): RawResponse } {
  const chunks: Buffer[] = [];
  const closed = new Promise<void>((resolve) => {
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("close", () => resolve());
    socket.on("error", () => resolve());
  });
  return { closed, received: () => parseResponse(Buffer.concat(chunks).toString("utf8")) };
}

/** Writes `head` (and `body`) on a fresh connection and collects everything until the server closes it. */
export async function exchange(port: number, head: string, body?: string | Buffer): Promise<RawResponse> {
  const socket = await open(port);
  const { closed, received } = collect(socket);
  socket.write(head);
  if (body !== undefined) socket.write(body);
  await closed;
  return received();
}

/** Polls until `condition` holds; fails the test after `timeoutMs`. */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}
