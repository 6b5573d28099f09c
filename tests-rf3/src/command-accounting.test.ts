import { ResourceExhaustedError as RefusedError, type ResourceExhaustedError } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { payloadRetaining, retainedBytesOf } from "./test-fixtures/sized-bodies.js";

/**
 * The command accounting formula at the byte, on three voter processes: with `MaxRetainedBytes` = B,
 * a catalog write whose body retains exactly B bytes (2 × UTF-16 code units + 2 × UTF-8 bytes + 4096)
 * is admitted on an idle lane, and one that retains more (one ASCII character more: 4 bytes; one
 * ASCII character swapped for a 2-byte one: 2 bytes) is refused before it takes its command ID.
 * Characters of 2, 3 and 4 UTF-8 bytes (the last a surrogate pair: two UTF-16 units) pin each term.
 * Every voter is the entry point once: a follower admits against its own lane before it forwards.
 */
const BUDGET = 256 * 1024;

/** Non-ASCII text per UTF-8 width, in counts whose retained bytes leave an ASCII filler to fill. */
const TEXTS: Readonly<Record<string, string>> = {
  ascii: "",
  "2-byte": "éé",
  "3-byte": "€",
  "4-byte (surrogate pair)": "😀",
  mixed: "é€😀é",
};

const startCluster = clusterPerTest();

/** The value a catalog PUT carries so that its body (`{"value":"..."}`) retains `retained` bytes. */
function valueRetaining(retained: number, text: string): string {
  const body = payloadRetaining(retained, (filler) => JSON.stringify({ value: `${text}${filler}` }));
  return (JSON.parse(body) as { value: string }).value;
}

describe("command accounting at the byte on three voters", () => {
  it("admits a body retaining exactly the budget on an idle lane and refuses any byte more", async () => {
    const cluster = await startCluster({
      env: { KeyLoad__CommandAdmission__MaxRetainedBytes: String(BUDGET) },
      // A different count limit per voter: only the byte budget decides here.
      voterEnv: {
        voter1: { KeyLoad__CommandAdmission__MaxCommands: "200" },
        voter2: { KeyLoad__CommandAdmission__MaxCommands: "201" },
        voter3: { KeyLoad__CommandAdmission__MaxCommands: "202" },
      },
    });
    const client = cluster.client(cluster.adminKey, {
      maxAttempts: 1,
      retryResourceExhausted: false,
      adaptiveThrottle: false,
    });
    for (const voter of cluster.voters) {
      for (const [name, text] of Object.entries(TEXTS)) {
        const exact = valueRetaining(BUDGET, text);
        const overByOne = `${exact}x`;
        // The first filler character becomes 'é': one UTF-16 unit still, one UTF-8 byte more.
        const overByTwo = exact.replace(/x/, "é");
        const key = (what: string) => `accounting/${voter.name}/${name}/${what}`;
        expect(retainedBytesOf(JSON.stringify({ value: exact }))).toBe(BUDGET);

        for (const [what, value, retained] of [
          ["one-more-ascii", overByOne, BUDGET + 4],
          ["one-more-utf8-byte", overByTwo, BUDGET + 2],
        ] as const) {
          expect(retainedBytesOf(JSON.stringify({ value }))).toBe(retained);
          const id = `${voter.name}-${name}-${what}`.replace(/[^A-Za-z0-9._:-]/g, "_");
          const refused = await client.put(key(what), value, { commandId: id, endpoint: voter.httpUrl }).then(
            () => undefined,
            (error: unknown) => error,
          );
          expect(refused, `${name} ${what} through ${voter.name}`).toBeInstanceOf(RefusedError);
          expect(refused as ResourceExhaustedError).toMatchObject({
            status: 429,
            reason: "CommandBytes",
            governor: "command",
            lane: "data",
            // The lane was idle: nothing else in use, and this command alone asked for too much.
            details: { limit: "MaxRetainedBytes", limitValue: BUDGET, requested: retained, inUse: 0 },
          });
          // The refusal took no ID: the same one now carries the body that fits.
          const written = await client.put(key(what), exact, { commandId: id, endpoint: voter.httpUrl });
          expect(written).toMatchObject({ commandId: id, version: 1 });
        }
        const fits = await client.put(key("exact"), exact, { endpoint: voter.httpUrl });
        expect(fits.version).toBe(1);
        expect((await client.get(key("exact"))).value).toBe(exact);
      }
    }
  });
});
