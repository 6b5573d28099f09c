import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";

export interface ReceivedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly at: number;
}

export interface ScriptedAnswer {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** Sent as JSON unless a string. */
  readonly body?: unknown;
  /** Sends the headers, then breaks the connection instead of the body. */
  readonly cutBody?: boolean;
  /**
   * Sends `body` as scripted. Otherwise a 2xx object body's `commandId` is the request's command ID, as
   * a voter's answer names the command it answers.
   */
  readonly verbatim?: boolean;
}

/** A contract error body. */
export function errorBody(code: string, reason = code, details?: Record<string, unknown>): unknown {
  return { error: { code, reason, message: `${code} (${reason})`, ...(details ? { details } : {}) } };
}

/**
 * A stand-in voter for the client's own tests: answers each request with the next scripted answer
 * (the last one repeats) and records what it received, so retries, command IDs, hints and bodies can be
 * checked exactly, without a cluster's timing.
 */
export class ScriptedVoter {
  readonly requests: ReceivedRequest[] = [];
  private answers: ScriptedAnswer[] = [];

  private constructor(
    private readonly server: Server | HttpsServer,
    readonly url: string,
  ) {}

  static start(...answers: ScriptedAnswer[]): Promise<ScriptedVoter> {
    return ScriptedVoter.listen(createServer(), "http", answers);
  }

  /** The same over HTTPS with this certificate and key (PEM), for `127.0.0.1`. */
  static startTls(tls: { cert: string; key: string }, ...answers: ScriptedAnswer[]): Promise<ScriptedVoter> {
    return ScriptedVoter.listen(createHttpsServer(tls), "https", answers);
  }

  private static async listen(
    server: Server | HttpsServer,
    scheme: "http" | "https",
    answers: ScriptedAnswer[],
  ): Promise<ScriptedVoter> {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const voter = new ScriptedVoter(
      server,
      `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`,
    );
    voter.script(...answers);
    server.on("request", (request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        voter.requests.push({
          method: request.method ?? "",
          url: request.url ?? "",
          headers: request.headers,
          body: Buffer.concat(chunks).toString("utf8"),
          at: Date.now(),
        });
        voter.answer(response, request.headers["keyload-command-id"]);
      });
    });
    return voter;
  }

  /** Replaces the answers still to come. */
  script(...answers: ScriptedAnswer[]): void {
    this.answers = answers;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private answer(response: ServerResponse, commandId: string | string[] | undefined): void {
    const next = (this.answers.length > 1 ? this.answers.shift() : this.answers[0]) ?? {
      status: 200,
      body: {},
    };
    const echoed =
      !next.verbatim &&
      typeof commandId === "string" &&
      next.status >= 200 &&
      next.status < 300 &&
      typeof next.body === "object" &&
      next.body !== null &&
      Object.hasOwn(next.body, "commandId");
    const answered = echoed ? { ...(next.body as object), commandId } : next.body;
    const body = typeof answered === "string" ? answered : JSON.stringify(answered ?? {});
    response.writeHead(next.status, { "content-type": "application/json", ...next.headers });
    if (next.cutBody) {
      response.flushHeaders();
      setTimeout(() => response.socket?.destroy(), 10);
      return;
    }
    response.end(body);
  }
}
