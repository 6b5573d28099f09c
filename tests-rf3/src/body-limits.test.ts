import type { TestCluster, VoterName } from "@keyload/apphost/testing";
import { NotFoundError } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { RawRequest, type RawResponse } from "./test-fixtures/raw-request.js";
import { bodyOfSize } from "./test-fixtures/sized-bodies.js";

/**
 * The seed's body-limit regression on three voter processes: public data bodies are capped at 8 MiB
 * and control bodies at 64 KiB; a declared Content-Length over the cap is refused from the headers
 * alone, a chunked body over it while it is read, both with a typed 413 before any command is
 * submitted, so the refused command ID stays free for other work. A cap forwarded to one voter is
 * that voter's alone.
 */
const MiB = 1024 * 1024;
const DATA_CAP = 8 * MiB;
const CONTROL_CAP = 64 * 1024;
/** voter2's own data cap, forwarded to it alone. */
const VOTER2_DATA_CAP = MiB;

const startCluster = clusterPerTest();

interface Route {
  readonly lane: "data" | "control";
  readonly method: "PUT" | "POST";
  path(id: string): string;
  /** A body of exactly `size` bytes this route accepts. */
  body(size: number): string;
}

const CATALOG: Route = {
  lane: "data",
  method: "PUT",
  path: (id) => `/v1/catalog/body-limits%2F${id}`,
  body: (size) => bodyOfSize(size, (filler) => `{"value":"${filler}"}`),
};
const DISPATCH: Route = {
  lane: "control",
  method: "POST",
  path: () => "/v1/dispatch/body-limits",
  body: (size) => bodyOfSize(size, (filler) => `{"directive":"d","data":"${filler}"}`),
};

function capOf(voter: VoterName, route: Route): number {
  if (route.lane === "control") return CONTROL_CAP;
  return voter === "voter2" ? VOTER2_DATA_CAP : DATA_CAP;
}

function start(): Promise<TestCluster> {
  return startCluster({
    voterEnv: { voter2: { KeyLoad__HttpAdmission__MaxDataBodyBytes: String(VOTER2_DATA_CAP) } },
  });
}

function headersFor(cluster: TestCluster, commandId: string, framing: Record<string, string>) {
  return {
    authorization: `Bearer ${cluster.adminKey}`,
    "content-type": "application/json",
    "keyload-command-id": commandId,
    ...framing,
  };
}

/** Waits for the response, failing the test rather than hanging when none comes. */
async function answerOf(request: RawRequest, timeoutMs = 20_000): Promise<RawResponse> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no response within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([request.response, timeout]);
  } finally {
    clearTimeout(timer);
    request.close();
  }
}

function expectBodyTooLarge(answer: RawResponse, route: Route): void {
  expect(answer.status, answer.body).toBe(413);
  expect(JSON.parse(answer.body)).toMatchObject({
    error: {
      code: "ResourceExhausted",
      reason: "BodyTooLarge",
      details: { governor: "http", pool: route.lane },
    },
  });
}

/**
 * Nothing was submitted under `commandId`: no outcome is committed, and a control command then
 * commits under that very ID, which it could not if the refused attempt had taken it.
 */
async function expectIdStillFree(cluster: TestCluster, commandId: string): Promise<void> {
  const admin = cluster.adminClient();
  await expect(admin.getCommand(commandId)).rejects.toBeInstanceOf(NotFoundError);
  const dispatched = await admin.dispatch("after-refusal", "reuse", { commandId }, { commandId });
  expect(dispatched.commandId).toBe(commandId);
  expect(await admin.getCommand(commandId)).toMatchObject({ commandId, status: "committed" });
}

describe("public body limits on three voters", () => {
  it("refuses a declared Content-Length over the cap from the headers, before the body is sent", async () => {
    const cluster = await start();
    for (const voter of cluster.voters) {
      for (const route of [CATALOG, DISPATCH]) {
        const cap = capOf(voter.name, route);
        const id = `declared-${voter.name}-${route.lane}`;
        const request = RawRequest.send(voter.httpUrl, {
          method: route.method,
          path: route.path(id),
          headers: headersFor(cluster, id, { "content-length": String(cap + 1) }),
        });
        // Not one byte of the body is written: the answer can only come from the headers.
        expectBodyTooLarge(await answerOf(request), route);
        await expectIdStillFree(cluster, id);
      }
    }
  });

  it("cuts a chunked body that passes the cap while reading it", async () => {
    const cluster = await start();
    for (const voter of cluster.voters) {
      for (const route of [CATALOG, DISPATCH]) {
        const cap = capOf(voter.name, route);
        const id = `chunked-${voter.name}-${route.lane}`;
        const request = RawRequest.send(voter.httpUrl, {
          method: route.method,
          path: route.path(id),
          headers: headersFor(cluster, id, { "transfer-encoding": "chunked" }),
        });
        // One byte past the cap, in pieces, and the body is never ended: the voter must answer while
        // it is still reading, not once the body is whole.
        const body = Buffer.from(route.body(cap + 1));
        for (let at = 0; at < body.length && !request.closed; at += 16 * 1024) {
          await request.writeChunk(body.subarray(at, at + 16 * 1024));
        }
        expectBodyTooLarge(await answerOf(request), route);
        await expectIdStillFree(cluster, id);
      }
    }
  });

  it("accepts bodies exactly at the cap, declared and chunked, and a voter's own cap binds it alone", async () => {
    const cluster = await start();
    const admin = cluster.adminClient();
    for (const voter of cluster.voters) {
      for (const route of [CATALOG, DISPATCH]) {
        const cap = capOf(voter.name, route);
        // Each framing at the shipped 8 MiB data cap on one voter each: the bodies are large.
        const framings =
          cap === DATA_CAP ? [voter.name === "voter1" ? "declared" : "chunked"] : ["declared", "chunked"];
        for (const framing of framings) {
          const id = `at-cap-${framing}-${voter.name}-${route.lane}`;
          const body = Buffer.from(route.body(cap));
          const written =
            framing === "declared"
              ? await admin.raw({
                  method: route.method,
                  path: route.path(id),
                  body,
                  commandId: id,
                  endpoint: voter.httpUrl,
                })
              : await admin.raw({
                  method: route.method,
                  path: route.path(id),
                  body: (async function* () {
                    for (let at = 0; at < body.length; at += 64 * 1024)
                      yield body.subarray(at, at + 64 * 1024);
                  })(),
                  commandId: id,
                  endpoint: voter.httpUrl,
                });
          expect(written.status, `${framing} ${cap} bytes: ${await written.body.text()}`).toBe(200);
        }
      }
    }
    // voter2's cap is its own: a body over it but under the shipped cap is refused there and
    // accepted (and committed) through the other two voters.
    const over = CATALOG.body(VOTER2_DATA_CAP + 1);
    for (const voter of cluster.voters) {
      const id = `voter2-cap-${voter.name}`;
      const answer = await admin.raw({
        method: "PUT",
        path: CATALOG.path(id),
        body: over,
        commandId: id,
        endpoint: voter.httpUrl,
      });
      const text = await answer.body.text();
      if (voter.name === "voter2") {
        expectBodyTooLarge({ status: answer.status, headers: {}, body: text }, CATALOG);
        await expectIdStillFree(cluster, id);
      } else {
        expect(answer.status, text).toBe(200);
        expect(await admin.getCommand(id)).toMatchObject({ status: "committed" });
      }
    }
  });
});
