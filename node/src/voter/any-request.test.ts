import { setTimeout as sleep } from "node:timers/promises";
import { ERROR_STATUS, type ErrorCode } from "@keyload/contract";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { RouteSpec } from "../http/routes.js";
import { ROUTES } from "../http/routes.js";
import {
  around,
  commandBodies,
  commandParams,
  type Held,
  param,
} from "../state/test-fixtures/odd-commands.js";
import { ADMIN_KEY } from "./test-fixtures/cluster-envs.js";
import { SchemaChecker } from "./test-fixtures/schema-checker.js";
import { call, VoterCluster } from "./test-fixtures/voter-cluster.js";

/**
 * Bad input at the HTTP edge of real voters: any route (the Raft configuration's changes aside, which
 * would reshape the cluster under the test), sometimes with another method or an unknown path, odd
 * path parameters and query, any of the admin's, a writer's, a reader's, a revoked-looking or no key,
 * a valid, reused, malformed or missing command ID, any content type, and a body around a valid one or
 * any text, sent to the leader or a follower (which forwards). Every answer must be what the contract
 * promises: a route's documented success, or its error body with the code's own status, never a 500;
 * and afterwards every voter's admission is idle again, so no answer leaked a reservation.
 */

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let cluster: VoterCluster;
let checker: SchemaChecker;
let held: Held;
/** Plain API keys by who holds them; `none` sends no Authorization header. */
const keys: Record<string, string | null> = {
  none: null,
  bogus: "kl_not_a_key_0123456789",
  admin: ADMIN_KEY,
};

async function ok(url: string, method: string, path: string, options: Parameters<typeof call>[3]) {
  const answer = await call(url, method, path, options);
  if (answer.status >= 300)
    throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

beforeAll(async () => {
  checker = await SchemaChecker.start();
  cluster = await VoterCluster.start();
  const url = cluster.voter(await cluster.waitForLeader()).httpUrl;
  let n = 0;
  const id = () => `setup-${n++}`;
  for (const [principalId, roles] of [
    ["writer1", ["writer", "reader"]],
    ["reader1", ["reader"]],
    ["svc", ["writer"]],
  ] as const) {
    await ok(url, "POST", "/v1/admin/principals", {
      body: { principalId, tenantId: "t1", roles },
      commandId: id(),
    });
  }
  const created = async (principalId: string) =>
    ok(url, "POST", `/v1/admin/principals/${principalId}/keys`, { commandId: id() });
  keys.writer = (await created("writer1")).apiKey as string;
  keys.reader = (await created("reader1")).apiKey as string;
  const spare = await created("svc");
  const writer = { key: keys.writer };
  await ok(url, "PUT", "/v1/subscriptions/s1", { ...writer, body: { prefix: "docs/" }, commandId: id() });
  for (const k of ["a", "b", "docs%2F1", "docs%2F2"]) {
    await ok(url, "PUT", `/v1/catalog/${k}`, { ...writer, body: { value: { k } }, commandId: id() });
  }
  for (let i = 0; i < 40; i++) {
    await ok(url, "POST", "/v1/queues/jobs/messages", { ...writer, body: { body: { i } }, commandId: id() });
  }
  const long = { max: 40, visibilityTimeoutMs: 12 * 60 * 60 * 1000 };
  const lease = await ok(url, "POST", "/v1/queues/jobs/leases", { ...writer, body: long, commandId: id() });
  const delivery = await ok(url, "POST", "/v1/subscriptions/s1/deliveries", {
    ...writer,
    body: long,
    commandId: id(),
  });
  const member = await ok(url, "PUT", "/v1/membership/m1", {
    ...writer,
    body: { status: "active", address: "10.0.0.1:1" },
    commandId: id(),
  });
  held = {
    leaseToken: lease.leaseToken as string,
    messageIds: (lease.messages as { messageId: string }[]).map((m) => m.messageId),
    deliveryId: delivery.deliveryId as string,
    etag: member.etag as string,
    keyId: spare.keyId as string,
  };
});

afterAll(async () => {
  await checker?.close();
  await cluster?.dispose();
});

interface OddRequest {
  readonly method: string;
  readonly path: string;
  readonly key: string;
  readonly commandId: string | null;
  readonly contentType: string | null;
  readonly body: string | null;
  readonly voter: number;
}

function oddRequests(): fc.Arbitrary<OddRequest> {
  const bodies = commandBodies(held);
  const params: Record<string, fc.Arbitrary<string>> = {
    ...commandParams(held),
    commandId: param(["setup-1"]),
  };
  const readBodies: Record<string, fc.Arbitrary<unknown>> = {
    "catalog.bulkGet": around({ keys: ["a", "docs/1", "none"] }),
    query: around({ prefix: "docs/", where: [{ path: "$.k", op: "eq", value: "a" }], limit: 5 }),
    search: around({ query: "doc*", prefix: "", limit: 5 }),
    "graph.traverse": around({ start: "a", direction: "both", maxDepth: 2, limit: 10 }),
  };
  const routes = ROUTES.filter((r) => r.type !== "cluster");
  let fresh = 0;
  return fc
    .record({
      route: fc.constantFrom(...routes),
      otherMethod: rarely(fc.constantFrom("GET", "PUT", "POST", "DELETE", "PATCH"), 8),
      unknownPath: rarely(
        fc.constantFrom("/v1/nowhere", "/v1/catalog", "/v1/queues/jobs", "/v2/catalog/a"),
        12,
      ),
      key: fc.constantFrom("writer", "writer", "writer", "writer", "admin", "reader", "bogus", "none"),
      commandId: fc.oneof(
        { weight: 6, arbitrary: fc.constant("fresh") },
        { weight: 1, arbitrary: fc.constantFrom("setup-3", "odd-1", "odd-2") },
        { weight: 1, arbitrary: fc.constantFrom("", "x".repeat(129), "bad id!", "ü") },
        { weight: 1, arbitrary: fc.constant(null) },
      ),
      contentType: fc.constantFrom(
        "application/json",
        "application/json",
        "application/json",
        "application/json",
        "application/json; charset=utf-8",
        "text/plain",
        "application/json; charset=latin1",
        null,
      ),
      text: rarely(fc.string({ maxLength: 40 }), 10),
      voter: fc.nat(2),
    })
    .chain((r) => {
      const names = [...r.route.path.matchAll(/\{([A-Za-z]+)\}/g)].map((m) => m[1]!);
      const kind = r.route.kind as string;
      const body: fc.Arbitrary<unknown> =
        (bodies as Record<string, fc.Arbitrary<unknown>>)[kind] ?? readBodies[kind] ?? fc.constant(undefined);
      return fc
        .record({
          values: fc.tuple(...names.map((n) => params[n] ?? param(["a"]))),
          after: fc.oneof(fc.constantFrom("0", "1", "-1", "abc", "1e3", ""), fc.string({ maxLength: 5 })),
          body,
        })
        .map(({ values, after, body: value }): OddRequest => {
          let path = r.unknownPath ?? r.route.path;
          names.forEach((name, i) => {
            path = path.replace(`{${name}}`, encodeURIComponent(values[i]!));
          });
          if (r.unknownPath === null && r.route.kind === "dispatch.read")
            path += `?after=${encodeURIComponent(after)}`;
          const method = r.otherMethod ?? r.route.method;
          const text = r.text ?? (value === undefined ? null : (JSON.stringify(value) ?? null));
          return {
            method,
            path,
            key: r.key,
            commandId: r.commandId === "fresh" ? `fuzz-${fresh++}` : r.commandId,
            contentType: method === "GET" ? null : r.contentType,
            body: method === "GET" ? null : text,
            voter: r.voter,
          };
        });
    });
}

/** One of `arbitrary`'s values once in `every` draws; null otherwise. */
function rarely<T>(arbitrary: fc.Arbitrary<T>, every: number): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: every - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary });
}

async function send(request: OddRequest): Promise<{ status: number; headers: Headers; text: string }> {
  const headers: Record<string, string> = {};
  const key = keys[request.key];
  if (key) headers.authorization = `Bearer ${key}`;
  if (request.commandId !== null) headers["keyload-command-id"] = request.commandId;
  if (request.contentType !== null) headers["content-type"] = request.contentType;
  const response = await fetch(`${cluster.voter(request.voter).httpUrl}${request.path}`, {
    method: request.method,
    headers,
    signal: AbortSignal.timeout(15_000),
    ...(request.body === null ? {} : { body: request.body }),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe("requests of any shape", () => {
  it("are answered with the route's documented success or a contract error, leaking nothing", async () => {
    await fc.assert(
      fc.asyncProperty(oddRequests(), async (request) => {
        const { status, headers, text } = await send(request);
        const shown = `${request.method} ${request.path} (${request.key}) -> ${status} ${text.slice(0, 300)}`;
        expect(status, shown).not.toBe(500);
        // A changed method may have made it another route's request.
        const served = ROUTES.find(
          (r) => r.method === request.method && pathPattern(r).test(request.path.split("?")[0]!),
        );
        if (status < 300) {
          expect(served, shown).toBeDefined();
          expect(status, shown).toBe(served!.status);
          if (served!.kind !== "metrics") {
            expect(await checker.response(served!, JSON.parse(text)), shown).toBeNull();
          }
          return;
        }
        const body: unknown = JSON.parse(text);
        expect(await checker.error(body), shown).toBeNull();
        const code = (body as { error: { code: ErrorCode; reason: string } }).error.code;
        const tooLarge = status === 413 && code === "ResourceExhausted";
        expect(tooLarge || ERROR_STATUS[code] === status, shown).toBe(true);
        expect(code, shown).not.toBe("Internal");
        if (status === 429) expect(headers.get("retry-after"), shown).toMatch(/^\d+$/);
      }),
      { numRuns: 800, endOnFailure: true, seed: 20261206 },
    );
    for (let i = 0; i < 3; i++) await waitForIdle(cluster.voter(i).httpUrl);
  });
});

/**
 * Waits until the voter's admission shows nothing but the status request itself (contract section 7):
 * a reservation that never comes back is a leak.
 */
async function waitForIdle(url: string): Promise<void> {
  let last: unknown;
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(50)) {
    const { body } = await call(url, "GET", "/v1/admin/admission");
    last = body;
    const command = body.commandAdmission as Record<string, unknown>;
    const http = body.httpAdmission as Record<string, { requests?: number; data?: number; control?: number }>;
    const noCommand = { commands: 0, retainedBytes: 0, queued: 0, active: 0 };
    if (
      JSON.stringify([command.data, command.control, command.verifiedScopes]) ===
        JSON.stringify([noCommand, noCommand, []]) &&
      http.data?.requests === 1 &&
      http.control?.requests === 0 &&
      http.ingress?.data === 0 &&
      http.ingress?.control === 0 &&
      (body.httpAdmission as { verifiedScopes: unknown[] }).verifiedScopes.length === 1
    ) {
      return;
    }
  }
  throw new Error(`${url} did not return to idle admission: ${JSON.stringify(last)}`);
}

function pathPattern(route: RouteSpec): RegExp {
  return new RegExp(`^${route.path.replace(/\{[A-Za-z]+\}/g, "[^/]*")}$`);
}
