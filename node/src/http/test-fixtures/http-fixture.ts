import { Writable } from "node:stream";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { pino } from "pino";
import { HttpAdmissionGovernor, type HttpAdmissionOptions } from "../../admission/index.js";
import { buildHttpApp, type HttpEdgeLimits } from "../http-app.js";
import { bearer, FakeVoterService } from "./fake-voter-service.js";

export interface HttpFixture {
  readonly app: FastifyInstance;
  readonly service: FakeVoterService;
  readonly governor: HttpAdmissionGovernor;
  /** Every log line the edge wrote, raw and parsed. */
  readonly logText: () => string;
  readonly logLines: () => Record<string, unknown>[];
  /** `PUT /v1/catalog/k` as the writer, command ID c1, JSON; `headers` add to or replace those. */
  putAsWriter(payload: string, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  /** The base URL once `listen` resolved. */
  listen(): Promise<{ port: number; url: string }>;
  close(): Promise<void>;
}

/** The edge over a fake voter, with a log captured in memory (at `logLevel`, trace by default). */
export function httpFixture(
  options: { admission?: HttpAdmissionOptions; limits?: Partial<HttpEdgeLimits>; logLevel?: string } = {},
): HttpFixture {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk.toString("utf8"));
      callback();
    },
  });
  const service = new FakeVoterService();
  const governor = new HttpAdmissionGovernor(options.admission);
  const app = buildHttpApp({
    service,
    httpAdmission: governor,
    logger: pino({ level: options.logLevel ?? "trace" }, sink),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
  });
  const logText = () => chunks.join("");
  return {
    app,
    service,
    governor,
    logText,
    logLines: () =>
      logText()
        .split("\n")
        .filter((line) => line.length > 0)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    putAsWriter: (payload, headers = {}) =>
      app.inject({
        method: "PUT",
        url: "/v1/catalog/k",
        headers: {
          authorization: bearer("writer"),
          "keyload-command-id": "c1",
          "content-type": "application/json",
          ...headers,
        },
        payload,
      }),
    async listen() {
      await app.listen({ host: "127.0.0.1", port: 0 });
      const address = app.server.address();
      if (address === null || typeof address === "string") throw new Error("not listening on TCP");
      return { port: address.port, url: `http://127.0.0.1:${address.port}` };
    },
    close: () => app.close(),
  };
}

/** The governor holds nothing: no slot, no modeled byte, no ingress request, no verified scope. */
export function idleStatus() {
  return {
    data: { requests: 0, modeledBytes: 0 },
    control: { requests: 0, modeledBytes: 0 },
    ingress: { data: 0, control: 0 },
    verifiedScopes: [],
  };
}
