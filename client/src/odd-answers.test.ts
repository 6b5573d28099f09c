import { ERROR_CODES, KeyLoadError } from "@keyload/contract";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectionError, KeyLoadClient } from "./index.js";
import { errorBody, type ScriptedAnswer, ScriptedVoter } from "./test-fixtures/scripted-voter.js";

/**
 * Whatever a voter, or a proxy in front of it, answers, the client's call settles, in time, with the
 * route's result or a typed error: a KeyLoadError with a contract code, or a ConnectionError. Never a
 * TypeError or SyntaxError out of its own parsing, never a wait past its deadline. A write's error
 * carries the write's command ID, which every attempt sent unchanged.
 */

const DEADLINE_MS = 400;

const status = fc.oneof(
  fc.constantFrom(200, 201, 204, 301, 400, 401, 403, 404, 409, 412, 413, 429, 500, 502, 503, 504),
  fc.integer({ min: 200, max: 599 }),
);

const oddText = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.constantFrom(
    "",
    "null",
    "[]",
    "{}",
    '{"error":',
    "<html>Bad Gateway</html>",
    '{"error":null}',
    "\u0000",
  ),
);

const errorLike = fc.oneof(
  fc.constantFrom(...ERROR_CODES).map((code) => errorBody(code)),
  fc
    .record({
      code: fc.oneof(fc.constantFrom(...ERROR_CODES), fc.string(), fc.jsonValue()),
      reason: fc.oneof(fc.string(), fc.jsonValue()),
      message: fc.oneof(fc.string(), fc.jsonValue()),
      commandId: fc.oneof(fc.string(), fc.jsonValue()),
      details: fc.jsonValue(),
    })
    .map((error) => ({ error })),
);

const successLike = fc.oneof(
  fc.constant({ commandId: "from-voter", key: "k", version: 1 }),
  fc.constant({ key: "k", value: 1, version: 1 }),
  fc.jsonValue(),
);

const answer: fc.Arbitrary<ScriptedAnswer> = fc.record(
  {
    status,
    body: fc.oneof(oddText, errorLike, successLike),
    headers: fc.record(
      {
        "retry-after": fc.constantFrom(
          "",
          "-1",
          "0",
          "1",
          "1.5",
          "abc",
          "99999999",
          "Wed, 21 Oct 2015 07:28:00 GMT",
        ),
        "keyload-leader": fc.constantFrom(
          "",
          "http://127.0.0.1:1",
          "javascript:alert(1)",
          "not a url",
          "voter2",
        ),
        "content-type": fc.constantFrom("application/json", "text/html", "application/json; charset=latin1"),
      },
      { requiredKeys: [] },
    ),
    // Now and then the headers, then a broken connection.
    cutBody: fc.nat(9).map((n) => n === 0),
  },
  { requiredKeys: ["status", "body"] },
);

type Call = (client: KeyLoadClient, commandId: string) => Promise<unknown>;

const CALLS: readonly [string, boolean, Call][] = [
  ["put", true, (c, id) => c.put("k", { n: 1 }, { commandId: id })],
  ["delete", true, (c, id) => c.delete("k", { commandId: id })],
  ["enqueue", true, (c, id) => c.enqueue("jobs", { n: 1 }, { commandId: id })],
  ["ackDelivery", true, (c, id) => c.ackDelivery("s1", "d1", { commandId: id })],
  ["get", false, (c) => c.get("k")],
  ["getCommand", false, (c) => c.getCommand("c1")],
  ["admissionStatus", false, (c) => c.admissionStatus()],
  ["ready", false, (c) => c.ready()],
  ["metrics", false, (c) => c.metrics()],
];

let voters: ScriptedVoter[];
let client: KeyLoadClient;

beforeAll(async () => {
  voters = [await ScriptedVoter.start(), await ScriptedVoter.start()];
  client = new KeyLoadClient({
    endpoints: voters.map((v) => v.url),
    apiKey: "key-1",
    deadlineMs: DEADLINE_MS,
    requestTimeoutMs: 1_000,
    backoff: { initialMs: 1, maxMs: 5 },
    adaptiveThrottle: false,
    retryBudget: { capacity: 1_000_000 },
  });
});

afterAll(async () => {
  await client?.close();
  await Promise.all((voters ?? []).map((v) => v.close()));
});

describe("answers of any shape", () => {
  it("end every call in its result or a typed error, within its deadline", async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...CALLS),
        fc.array(answer, { minLength: 1, maxLength: 4 }),
        fc.array(answer, { minLength: 1, maxLength: 4 }),
        async ([name, write, call], first, second) => {
          voters[0]!.script(...first);
          voters[1]!.script(...second);
          const sent = voters.map((v) => v.requests.length);
          const commandId = `odd-${n++}`;
          const startedAt = performance.now();
          const outcome = await call(client, commandId).then(
            () => undefined,
            (error: unknown) => error,
          );
          const tookMs = performance.now() - startedAt;
          const shown = `${name} after ${JSON.stringify([first, second]).slice(0, 400)}: ${String(outcome)}`;
          // The deadline bounds the call, an attempt under way included (with slack for a busy machine).
          expect(tookMs, shown).toBeLessThan(DEADLINE_MS + 500);
          if (outcome !== undefined) {
            const typed = outcome instanceof KeyLoadError || outcome instanceof ConnectionError;
            expect(typed, shown).toBe(true);
            const { code } = outcome as { code: string };
            expect(
              code === "ConnectionFailed" || (ERROR_CODES as readonly string[]).includes(code),
              shown,
            ).toBe(true);
            if (write) expect((outcome as { commandId?: string }).commandId, shown).toBe(commandId);
          }
          if (write) {
            const ids = voters.flatMap((v, i) =>
              v.requests.slice(sent[i]).map((r) => r.headers["keyload-command-id"]),
            );
            expect(new Set(ids), shown).toEqual(new Set([commandId]));
          }
        },
      ),
      { numRuns: 300, endOnFailure: true, seed: 20261206 },
    );
  }, 120_000);
});
