import { readFileSync } from "node:fs";
import { makeTestCertificates, type TestCertificates } from "@keyload/test-fixtures";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConnectionError, InvalidArgumentError, KeyLoadClient, type KeyLoadClientOptions } from "./index.js";
import { errorBody, type ScriptedAnswer, ScriptedVoter } from "./test-fixtures/scripted-voter.js";

const OK_PUT: ScriptedAnswer = { status: 200, body: { commandId: "from-voter", key: "k", version: 1 } };

let certs: TestCertificates;
let serving: { cert: string; key: string };
beforeAll(() => {
  certs = makeTestCertificates();
  serving = { cert: readFileSync(certs.certFile, "utf8"), key: readFileSync(certs.keyFile, "utf8") };
});
afterAll(() => certs.remove());

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()));
});

async function tlsVoter(...answers: ScriptedAnswer[]): Promise<ScriptedVoter> {
  const v = await ScriptedVoter.startTls(serving, ...answers);
  opened.push(v);
  return v;
}

function client(endpoints: string[], options: Partial<KeyLoadClientOptions> = {}): KeyLoadClient {
  const c = new KeyLoadClient({
    endpoints,
    apiKey: "key-1",
    backoff: { initialMs: 1, maxMs: 5 },
    adaptiveThrottle: false,
    ...options,
  });
  opened.push(c);
  return c;
}

describe("KeyLoadClient over HTTPS", () => {
  it("trusts voters whose certificate the given CA signed", async () => {
    const v = await tlsVoter(OK_PUT);
    expect(v.url).toMatch(/^https:\/\//);
    expect((await client([v.url], { tls: { ca: certs.ca } }).put("k", 1)).version).toBe(1);
    expect(v.requests).toHaveLength(1);
    // The CA as bytes, or in a list, works the same.
    expect((await client([v.url], { tls: { ca: [Buffer.from(certs.ca)] } }).put("k", 1)).version).toBe(1);
  });

  it("without the CA fails with TlsFailed, having sent nothing, after asking each voter once", async () => {
    const a = await tlsVoter(OK_PUT);
    const b = await tlsVoter(OK_PUT);
    const error = await client([a.url, b.url])
      .put("k", 1, { commandId: "cmd-tls" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    // Not UnknownWriteOutcome: no attempt left this process, so the write certainly did not apply.
    expect(error).toMatchObject({ reason: "TlsFailed", mayHaveReachedVoter: false, commandId: "cmd-tls" });
    expect((error as ConnectionError).cause).toMatchObject({ code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" });
    expect(a.requests).toHaveLength(0);
    expect(b.requests).toHaveLength(0);
  });

  it("follows an https leader hint straight to the listed leader", async () => {
    const leader = await tlsVoter(OK_PUT);
    const bystander = await tlsVoter(OK_PUT);
    const follower = await tlsVoter({
      status: 503,
      headers: { "keyload-leader": `id="voter3", url="${leader.url}/"` },
      body: errorBody("Unavailable", "NotLeader"),
    });
    const c = client([follower.url, bystander.url, leader.url], { tls: { ca: certs.ca } });
    expect((await c.put("k", 1)).version).toBe(1);
    expect(follower.requests).toHaveLength(1);
    expect(bystander.requests).toHaveLength(0);
    expect(leader.requests).toHaveLength(1);
  });

  it("refuses an empty CA", () => {
    expect(() => client(["https://127.0.0.1:1"], { tls: { ca: "" } })).toThrow(InvalidArgumentError);
    expect(() => client(["https://127.0.0.1:1"], { tls: { ca: [] } })).toThrow(InvalidArgumentError);
  });
});
