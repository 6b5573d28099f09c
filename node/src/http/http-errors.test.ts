import {
  CommandIdConflictError,
  FailedPreconditionError,
  InternalError,
  InvalidArgumentError,
  type KeyLoadError,
  LeaseLostError,
  NotFoundError,
  PermissionDeniedError,
  ResourceExhaustedError,
  UnavailableError,
  UnknownWriteOutcomeError,
} from "@keyload/contract";
import type { InjectOptions } from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { expectContractError } from "./test-fixtures/contract-error.js";
import { bearer, KEYS } from "./test-fixtures/fake-voter-service.js";
import { type HttpFixture, httpFixture, idleStatus } from "./test-fixtures/http-fixture.js";
import { exchange } from "./test-fixtures/raw-http.js";

let fx: HttpFixture;
beforeEach(() => {
  fx = httpFixture();
});
afterEach(async () => {
  expect(fx.governor.status()).toMatchObject(idleStatus());
  await fx.close();
});

const JSON_TYPE = { "content-type": "application/json" };

function put(payload: string, headers: Record<string, string> = {}, url = "/v1/catalog/k"): InjectOptions {
  return {
    method: "PUT",
    url,
    headers: { authorization: bearer("writer"), "keyload-command-id": "cmd-7", ...JSON_TYPE, ...headers },
    payload,
  };
}

describe("bad input answers 400 InvalidArgument and submits nothing", () => {
  it.each([
    ["malformed JSON", '{"value":', "MalformedJson"],
    ["trailing garbage", '{"value":1} x', "MalformedJson"],
    ["a JSON array", "[1,2]", "InvalidBody"],
    ["a JSON string", '"text"', "InvalidBody"],
    ["no body where one is required", "", "InvalidBody"],
    ["a missing required field", '{"expectedVersion":1}', "InvalidBody"],
    ["a string where an integer goes", '{"value":1,"expectedVersion":"3"}', "InvalidBody"],
    ["a negative version", '{"value":1,"expectedVersion":-1}', "InvalidBody"],
    ["a fractional version", '{"value":1,"expectedVersion":1.5}', "InvalidBody"],
  ])("%s", async (_, payload, reason) => {
    const error = expectContractError(await fx.app.inject(put(payload)), 400, "InvalidArgument", reason);
    expect(error.commandId).toBe("cmd-7");
    expect(fx.service.submitted).toHaveLength(0);
  });

  it("names the field that has the wrong type", async () => {
    const error = expectContractError(
      await fx.app.inject(put('{"value":1,"expectedVersion":"3"}')),
      400,
      "InvalidArgument",
    );
    expect(error.message).toContain("expectedVersion");
  });

  it("refuses a body that is not UTF-8", async () => {
    const response = await fx.app.inject({
      ...put(""),
      payload: Buffer.from([0x7b, 0x22, 0x76, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]),
    });
    expectContractError(response, 400, "InvalidArgument", "MalformedBody");
  });

  it.each([
    ["a transaction operation without op", "/v1/transactions", "POST", { operations: [{ key: "a" }] }],
    ["a put without a value", "/v1/transactions", "POST", { operations: [{ op: "put", key: "a" }] }],
    ["a check without a version", "/v1/transactions", "POST", { operations: [{ op: "check", key: "a" }] }],
    ["an edge without a target", "/v1/graph/edges", "PUT", { from: "a", type: "t" }],
    ["an ack without its lease token", "/v1/queues/q/messages/m/ack", "POST", {}],
    ["a lease of zero messages", "/v1/queues/q/leases", "POST", { max: 0 }],
    [
      "a membership row with an unknown status",
      "/v1/membership/m1",
      "PUT",
      { status: "sleepy", address: "x" },
    ],
    ["a directive that is not text", "/v1/dispatch/ops", "POST", { directive: 7 }],
    ["a subscription without a prefix", "/v1/subscriptions/s", "PUT", { from: "end" }],
    ["an outbox message without a queue", "/v1/transactions", "POST", { outbox: [{ body: 1 }] }],
  ])("refuses %s", async (_, url, method, body) => {
    const response = await fx.app.inject({
      method: method as "POST" | "PUT",
      url,
      headers: { authorization: bearer("writer"), "keyload-command-id": "c1", ...JSON_TYPE },
      payload: JSON.stringify(body),
    });
    expectContractError(response, 400, "InvalidArgument", "InvalidBody");
    expect(fx.service.submitted).toHaveLength(0);
  });

  it("refuses an admin principal write with an unknown role", async () => {
    const response = await fx.app.inject({
      method: "POST",
      url: "/v1/admin/principals",
      headers: { authorization: bearer("admin"), "keyload-command-id": "c1", ...JSON_TYPE },
      payload: JSON.stringify({ principalId: "p", tenantId: "t", roles: ["root"] }),
    });
    expectContractError(response, 400, "InvalidArgument", "InvalidBody");
  });

  it.each([
    ["a heavy read with keys of the wrong type", "/v1/catalog/bulk-get", { keys: [1] }],
    ["a search without a query", "/v1/search", { prefix: "a" }],
    ["a traversal too deep", "/v1/graph/traverse", { start: "a", maxDepth: 1000 }],
    ["a query with a filter that is not an object", "/v1/query", { where: ["x"] }],
  ])("refuses %s", async (_, url, body) => {
    const response = await fx.app.inject({
      method: "POST",
      url,
      headers: { authorization: bearer("reader"), ...JSON_TYPE },
      payload: JSON.stringify(body),
    });
    expectContractError(response, 400, "InvalidArgument", "InvalidBody");
    expect(fx.service.reads).toHaveLength(0);
  });

  it.each([
    ["a queue name with a space", "/v1/queues/a%20b/leases"],
    ["a principal ID with a slash", "/v1/admin/principals/a%2Fb/keys"],
    ["a key of 513 characters", `/v1/catalog/${"k".repeat(513)}`],
    ["an empty key", "/v1/catalog/"],
  ])("refuses %s in the path", async (_, url) => {
    const admin = url.includes("/admin/");
    const response = await fx.app.inject({
      method: url.startsWith("/v1/catalog") ? "PUT" : "POST",
      url,
      headers: {
        authorization: bearer(admin ? "admin" : "writer"),
        "keyload-command-id": "c1",
        ...JSON_TYPE,
      },
      payload: url.startsWith("/v1/catalog") ? '{"value":1}' : "",
    });
    expectContractError(response, 400, "InvalidArgument", "InvalidParameter");
    expect(fx.service.submitted).toHaveLength(0);
  });

  it("refuses a path parameter longer than any valid one", async () => {
    const response = await fx.app.inject({
      method: "GET",
      url: `/v1/catalog/${"%F0%9F%98%80".repeat(600)}`,
      headers: { authorization: bearer("reader") },
    });
    expectContractError(response, 400, "InvalidArgument", "InvalidParameter");
  });

  it("refuses a command ID in the path outside the contract's alphabet", async () => {
    const response = await fx.app.inject({
      method: "GET",
      url: "/v1/commands/a%20b",
      headers: { authorization: bearer("reader") },
    });
    expectContractError(response, 400, "InvalidArgument", "InvalidParameter");
  });

  it("refuses a malformed percent-encoding", async () => {
    const response = await fx.app.inject({
      method: "GET",
      url: "/v1/catalog/%E0%A4%A",
      headers: { authorization: bearer("reader") },
    });
    expectContractError(response, 400, "InvalidArgument", "MalformedUrl");
    expect(fx.service.reads).toHaveLength(0);
  });

  it.each([
    "after=-1",
    // A page of no directives would read as a channel with none.
    "limit=0",
    "limit=000",
    // Past the schema's maximum, as query and search refuse theirs.
    "limit=1001",
    "limit=9999",
  ])("refuses a query parameter of the wrong shape: %s", async (query) => {
    const response = await fx.app.inject({
      method: "GET",
      url: `/v1/dispatch/ops?${query}`,
      headers: { authorization: bearer("reader") },
    });
    expectContractError(response, 400, "InvalidArgument", "InvalidQuery");
    expect(fx.service.reads).toHaveLength(0);
  });

  it.each(["limit=010", "limit=1000", "limit=01000"])(
    "takes a limit up to the maximum: %s",
    async (query) => {
      const response = await fx.app.inject({
        method: "GET",
        url: `/v1/dispatch/ops?${query}`,
        headers: { authorization: bearer("reader") },
      });
      expect(response.statusCode, response.body).toBe(200);
    },
  );

  it.each([
    ["missing", undefined, "MissingCommandId"],
    ["empty", "", "InvalidCommandId"],
    ["too long", "x".repeat(129), "InvalidCommandId"],
    ["with a space", "a b", "InvalidCommandId"],
    ["with a slash", "a/b", "InvalidCommandId"],
  ])("refuses a command ID that is %s, before reading the body", async (_, id, reason) => {
    const headers: Record<string, string> = { authorization: bearer("writer"), ...JSON_TYPE };
    if (id !== undefined) headers["keyload-command-id"] = id;
    const response = await fx.app.inject({
      method: "PUT",
      url: "/v1/catalog/k",
      headers,
      payload: '{"value":1}',
    });
    const error = expectContractError(response, 400, "InvalidArgument", reason);
    expect(error.commandId).toBeUndefined();
    // The small body left unread is drained after the answer, keeping the connection.
    expect(response.headers.connection).toBe("keep-alive");
    expect(fx.service.submitted).toHaveLength(0);
  });

  it.each(["utf-8", "UTF-8", '"utf-8"', "utf8"])("accepts JSON declared as charset=%s", async (charset) => {
    const response = await fx.app.inject(
      put('{"value":1}', { "content-type": `application/json; charset=${charset}` }),
    );
    expect(response.statusCode).toBe(200);
  });

  it("accepts a command ID of 128 characters of the whole alphabet", async () => {
    const id = "Az09._:-".repeat(16);
    const response = await fx.app.inject(put('{"value":1}', { "keyload-command-id": id }));
    expect(response.statusCode).toBe(200);
    expect(fx.service.submitted[0]?.commandId).toBe(id);
  });

  it.each([
    ["text/plain", { "content-type": "text/plain" }],
    ["form data", { "content-type": "application/x-www-form-urlencoded" }],
    ["no content type", { "content-type": "" }],
    ["a malformed content type", { "content-type": "application/" }],
    ["JSON in another charset", { "content-type": "application/json; charset=iso-8859-1" }],
    ["JSON in a quoted other charset", { "content-type": 'application/json; charset="utf-16"' }],
  ])("refuses a body sent as %s", async (_, headers) => {
    const options = put('{"value":1}', headers);
    if (headers["content-type"] === "") delete (options.headers as Record<string, string>)["content-type"];
    const response = await fx.app.inject(options);
    expectContractError(response, 400, "InvalidArgument", "UnsupportedContentType");
    expect(fx.service.submitted).toHaveLength(0);
  });
});

describe("unknown routes answer 404 NotFound in the contract's body", () => {
  it.each([
    ["GET", "/v1/nothing"],
    ["PATCH", "/v1/catalog/k"],
    ["POST", "/v1/catalog/k"],
    ["GET", "/"],
    ["HEAD", "/v1/catalog/k"],
  ])("%s %s", async (method, url) => {
    const response = await fx.app.inject({
      method: method as "GET",
      url,
      headers: { authorization: bearer("admin"), ...JSON_TYPE },
      ...(method === "POST" ? { payload: '{"a":1}' } : {}),
    });
    if (method === "HEAD") {
      expect(response.statusCode).toBe(404);
      return;
    }
    expectContractError(response, 404, "NotFound", "RouteNotFound");
    expect(fx.service.calls).toBe(0);
    expect(fx.service.authentications).toBe(0);
  });
});

describe("authentication and roles", () => {
  it.each([
    ["no Authorization header", undefined, "MissingCredentials"],
    ["another scheme", `Basic ${KEYS.writer.key}`, "MalformedCredentials"],
    ["Bearer without a key", "Bearer ", "MalformedCredentials"],
    ["an unknown key", "Bearer kl_not_a_key_anyone_has", "InvalidCredentials"],
  ])("answers 401 Unauthenticated for %s", async (_, authorization, reason) => {
    const headers: Record<string, string> = { "keyload-command-id": "c1", ...JSON_TYPE };
    if (authorization !== undefined) headers.authorization = authorization;
    const response = await fx.app.inject({
      method: "PUT",
      url: "/v1/catalog/k",
      headers,
      payload: '{"value":1}',
    });
    expectContractError(response, 401, "Unauthenticated", reason);
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="keyload"');
    expect(response.body).not.toContain(KEYS.writer.key);
    expect(response.body).not.toContain("kl_not_a_key");
    expect(fx.service.submitted).toHaveLength(0);
  });

  it("answers 401 for two Authorization headers rather than take the first", async () => {
    const { port } = await fx.listen();
    const response = await exchange(
      port,
      "GET /v1/catalog/k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
        `Authorization: ${bearer("admin")}\r\nAuthorization: ${bearer("reader")}\r\n\r\n`,
    );
    expectContractError(response, 401, "Unauthenticated", "MalformedCredentials");
    expect(fx.service.reads).toHaveLength(0);
  });

  it("looks a key it does not know up again once caught up with the commit, before refusing it", async () => {
    // Created through another voter and acknowledged there, not yet applied here.
    fx.service.keysAfterCatchUp.set("kl_created_elsewhere", KEYS.writer.identity);
    const known = await fx.app.inject(put('{"value":1}', { authorization: "Bearer kl_created_elsewhere" }));
    expect(known.statusCode, known.body).toBe(200);
    expect(fx.service.catchUps).toBe(1);
    const unknown = await fx.app.inject(put('{"value":1}', { authorization: "Bearer kl_nobody_has_this" }));
    expectContractError(unknown, 401, "Unauthenticated", "InvalidCredentials");
    expect(fx.service.catchUps).toBe(2);
    // A known key never waits.
    await fx.app.inject(put('{"value":1}'));
    expect(fx.service.catchUps).toBe(2);
  });

  it("looks a known key up again once caught up before refusing it a role, which may have been granted", async () => {
    // Granted through the leader and acknowledged there, not yet applied here.
    fx.service.keysAfterCatchUp.set(KEYS.reader.key, { ...KEYS.reader.identity, roles: ["writer"] });
    const granted = await fx.app.inject(put('{"value":1}', { authorization: bearer("reader") }));
    expect(granted.statusCode, granted.body).toBe(200);
    expect(fx.service.catchUps).toBe(1);
  });

  it("refuses a role still missing once caught up", async () => {
    const refused = await fx.app.inject(put('{"value":1}', { authorization: bearer("reader") }));
    expectContractError(refused, 403, "PermissionDenied", "MissingRole");
    expect(fx.service.catchUps).toBe(1);
    expect(fx.service.submitted).toHaveLength(0);
  });

  it.each([
    ["GET", "/v1/admin/admission", undefined],
    ["GET", "/v1/admin/cluster/members", undefined],
    ["POST", "/v1/admin/cluster/members", '{"memberId":"voter4"}'],
    ["POST", "/v1/admin/cluster/members/voter4/promote", ""],
    ["DELETE", "/v1/admin/cluster/members/voter2", undefined],
    ["POST", "/v1/admin/cluster/leader", '{"memberId":"voter2"}'],
  ] as const)("refuses %s %s to an admin of a tenant other than system", async (method, url, payload) => {
    const response = await fx.app.inject({
      method,
      url,
      headers: { authorization: bearer("tenantAdmin"), ...JSON_TYPE },
      ...(payload === undefined ? {} : { payload }),
    });
    expectContractError(response, 403, "PermissionDenied", "OtherTenant");
    expect(fx.service.calls).toBe(0);
    // A principal never changes tenant: nothing this voter could catch up with changes the answer,
    // whether it has the route's role or not.
    expect(fx.service.catchUps).toBe(0);
    const writer = await fx.app.inject({
      method,
      url,
      headers: { authorization: bearer("writer"), ...JSON_TYPE },
      ...(payload === undefined ? {} : { payload }),
    });
    expectContractError(writer, 403, "PermissionDenied", "MissingRole");
    expect(fx.service.catchUps).toBe(0);
    const system = await fx.app.inject({
      method,
      url,
      headers: { authorization: bearer("admin"), ...JSON_TYPE },
      ...(payload === undefined ? {} : { payload }),
    });
    expect(system.statusCode, system.body).toBe(200);
  });

  it("lets an admin of a tenant administer its principals", async () => {
    const response = await fx.app.inject({
      method: "POST",
      url: "/v1/admin/principals",
      headers: { authorization: bearer("tenantAdmin"), "keyload-command-id": "c1", ...JSON_TYPE },
      payload: '{"principalId":"p","tenantId":"t1","roles":["reader"]}',
    });
    expect(response.statusCode, response.body).toBe(201);
  });

  it("answers a catch-up that fails with its error, and releases the slot", async () => {
    fx.service.catchUpFailure = new UnavailableError("no leader", { reason: "NoLeader" });
    const response = await fx.app.inject(put('{"value":1}', { authorization: "Bearer kl_unknown_here" }));
    expectContractError(response, 503, "Unavailable", "NoLeader");
    expect(fx.service.submitted).toHaveLength(0);
  });

  it("accepts the scheme in any case", async () => {
    const response = await fx.app.inject({
      method: "GET",
      url: "/v1/membership",
      headers: { authorization: `bearer ${KEYS.reader.key}` },
    });
    expect(response.statusCode).toBe(200);
  });

  it("needs a key on every API route, reads included", async () => {
    for (const url of ["/v1/catalog/k", "/v1/membership", "/v1/admin/admission", "/v1/commands/c1"]) {
      expectContractError(await fx.app.inject({ method: "GET", url }), 401, "Unauthenticated");
    }
    expect(fx.service.reads).toHaveLength(0);
  });

  it.each([
    ["a reader writes", "reader", "PUT", "/v1/catalog/k", '{"value":1}'],
    ["a reader acks", "reader", "POST", "/v1/queues/q/messages/m/ack", '{"leaseToken":"t"}'],
    [
      "a writer creates a principal",
      "writer",
      "POST",
      "/v1/admin/principals",
      '{"principalId":"p","tenantId":"t","roles":["admin"]}',
    ],
    ["a writer creates a key", "writer", "POST", "/v1/admin/principals/p/keys", ""],
    ["a writer reads admission status", "writer", "GET", "/v1/admin/admission", undefined],
  ] as const)("answers 403 PermissionDenied when %s", async (_, who, method, url, payload) => {
    const response = await fx.app.inject({
      method,
      url,
      headers: { authorization: bearer(who), "keyload-command-id": "c1", ...JSON_TYPE },
      ...(payload === undefined ? {} : { payload }),
    });
    expectContractError(response, 403, "PermissionDenied", "MissingRole");
    expect(fx.service.calls).toBe(0);
  });
});

describe("the voter's errors", () => {
  const cases: [string, KeyLoadError, number][] = [
    [
      "command admission",
      new ResourceExhaustedError("CommandBytes", "full", { governor: "command", lane: "data" }),
      429,
    ],
    ["an unknown outcome", new UnknownWriteOutcomeError("leader lost"), 504],
    ["no leader", new UnavailableError("no leader", { reason: "NoLeader" }), 503],
    ["a command ID conflict", new CommandIdConflictError("other body", { reason: "DigestMismatch" }), 409],
    ["a lost lease", new LeaseLostError("expired", { reason: "LeaseExpired" }), 409],
    ["a version mismatch", new FailedPreconditionError("v2", { reason: "VersionMismatch" }), 412],
    ["a missing document", new NotFoundError("none", { reason: "DocumentNotFound" }), 404],
    ["a canonical limit", new InvalidArgumentError("too big", { reason: "MutationTooLarge" }), 400],
    ["an apply-time refusal", new PermissionDeniedError("not admin", { reason: "MissingRole" }), 403],
  ];

  it.each(cases)("answers %s with its status and body, naming the command", async (_, thrown, status) => {
    fx.service.onSubmit = async () => {
      throw thrown;
    };
    const response = await fx.app.inject(put('{"value":1}'));
    const error = expectContractError(response, status, thrown.code, thrown.reason);
    expect(error.message).toBe(thrown.message);
    expect(error.commandId).toBe("cmd-7");
    expect(error.details).toEqual(thrown.details);
  });

  it("sends Retry-After with a command admission refusal", async () => {
    fx.service.onSubmit = async () => {
      throw new ResourceExhaustedError(
        "TenantCommands",
        "full",
        { governor: "command", lane: "control" },
        {
          retryAfterSeconds: 2,
        },
      );
    };
    const response = await fx.app.inject(put('{"value":1}'));
    expect(response.headers["retry-after"]).toBe("2");
  });

  it("names the leader on Unavailable and UnknownWriteOutcome", async () => {
    for (const thrown of [new UnavailableError("no quorum"), new UnknownWriteOutcomeError("deadline")]) {
      fx.service.onSubmit = async () => {
        throw thrown;
      };
      const response = await fx.app.inject(put('{"value":1}'));
      expect(response.headers["keyload-leader"]).toBe('id="voter2", url="http://127.0.0.1:7102"');
    }
    fx.service.leader = { leaderId: "voter3", leaderHttpUrl: null };
    const partial = await fx.app.inject(put('{"value":1}'));
    expect(partial.headers["keyload-leader"]).toBe('id="voter3"');
    fx.service.leader = { leaderId: null, leaderHttpUrl: null };
    const unknown = await fx.app.inject(put('{"value":1}'));
    expect(unknown.statusCode).toBe(504);
    expect(unknown.headers["keyload-leader"]).toBeUndefined();
  });

  it("does not name the leader on other errors", async () => {
    fx.service.onSubmit = async () => {
      throw new FailedPreconditionError("v");
    };
    const response = await fx.app.inject(put('{"value":1}'));
    expect(response.headers["keyload-leader"]).toBeUndefined();
  });

  it("answers a read's NotFound with 404", async () => {
    fx.service.onRead = async () => {
      throw new NotFoundError("no outcome yet", { reason: "OutcomeNotFound" });
    };
    const response = await fx.app.inject({
      method: "GET",
      url: "/v1/commands/c9",
      headers: { authorization: bearer("reader") },
    });
    expectContractError(response, 404, "NotFound", "OutcomeNotFound");
  });

  it("answers an untyped failure with 500 Internal, hiding its message and stack", async () => {
    fx.service.onSubmit = async () => {
      throw new Error("SQLITE_CORRUPT at /var/lib/keyload/voter1/state.db");
    };
    const response = await fx.app.inject(put('{"value":1}'));
    const error = expectContractError(response, 500, "Internal", "Internal");
    expect(response.body).not.toContain("SQLITE_CORRUPT");
    expect(response.body).not.toContain("/var/lib");
    expect(error.commandId).toBe("cmd-7");
    expect(fx.logText()).toContain("SQLITE_CORRUPT");
  });

  it("answers a failure that carries a code and a 4xx status, not fastify's own, with 500 Internal", async () => {
    fx.service.onSubmit = async () => {
      throw Object.assign(new Error("lookup failed"), { code: "ENOTFOUND", statusCode: 404 });
    };
    const response = await fx.app.inject(put('{"value":1}'));
    expectContractError(response, 500, "Internal", "Internal");
    expect(fx.logText()).toContain("lookup failed");
  });

  it("answers a synchronous throw of authenticate with 500 Internal", async () => {
    fx.service.authenticate = () => {
      throw new TypeError("catalog closed");
    };
    const response = await fx.app.inject(put('{"value":1}'));
    expectContractError(response, 500, "Internal");
    expect(response.body).not.toContain("catalog closed");
  });

  it("answers a typed Internal error with its own message", async () => {
    fx.service.onRead = async () => {
      throw new InternalError("the read index could not be served", { reason: "ReadIndexFailed" });
    };
    const response = await fx.app.inject({
      method: "GET",
      url: "/v1/membership",
      headers: { authorization: bearer("reader") },
    });
    expectContractError(response, 500, "Internal", "ReadIndexFailed");
  });
});
