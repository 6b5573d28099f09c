import { afterEach, describe, expect, it } from "vitest";
import { InternalError, KeyLoadClient } from "./index.js";
import { ScriptedVoter } from "./test-fixtures/scripted-voter.js";

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()));
});

async function scripted(...bodies: unknown[]): Promise<{ voter: ScriptedVoter; client: KeyLoadClient }> {
  const voter = await ScriptedVoter.start(...bodies.map((body) => ({ status: 200, body })));
  const client = new KeyLoadClient({ endpoints: [voter.url], apiKey: "key-1", adaptiveThrottle: false });
  opened.push(voter, client);
  return { voter, client };
}

const doc = (key: string) => ({ key, value: key, version: 1 });
const collect = async <T>(items: AsyncIterable<T>): Promise<T[]> => {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
};

describe("paging through bounded reads", () => {
  it("bulkGetAll asks again for the remaining keys of each page", async () => {
    const { voter, client } = await scripted(
      { items: [{ ...doc("a"), found: true }], remaining: ["b", "c"] },
      {
        items: [
          { key: "b", found: false },
          { ...doc("c"), found: true },
        ],
      },
    );
    const items = await collect(client.bulkGetAll(["a", "b", "c"]));
    expect(items.map((item) => [item.key, item.found])).toEqual([
      ["a", true],
      ["b", false],
      ["c", true],
    ]);
    expect(voter.requests.map((r) => JSON.parse(r.body).keys)).toEqual([
      ["a", "b", "c"],
      ["b", "c"],
    ]);
  });

  it("queryAll goes on past a page the scan bound left empty", async () => {
    const { voter, client } = await scripted(
      { items: [doc("a")], next: "a" },
      { items: [], next: "m" },
      { items: [doc("z")] },
    );
    expect((await collect(client.queryAll({ prefix: "" }))).map((d) => d.key)).toEqual(["a", "z"]);
    expect(voter.requests.map((r) => JSON.parse(r.body).after)).toEqual([undefined, "a", "m"]);
  });

  it("throws CursorStuck for a query page whose cursor does not move, rather than loop", async () => {
    const { voter, client } = await scripted({ items: [doc("a")], next: "a" }, { items: [], next: "a" });
    const error = await settle(client.queryAll({ prefix: "" }));
    expect(error).toBeInstanceOf(InternalError);
    expect(error).toMatchObject({ reason: "CursorStuck" });
    expect(voter.requests).toHaveLength(2);
  }, 5_000);

  it("throws CursorStuck for a bulk-get page that leaves as many keys remaining as it was asked", async () => {
    const { voter, client } = await scripted({ items: [], remaining: ["a", "b"] });
    const error = await settle(client.bulkGetAll(["a", "b"]));
    expect(error).toBeInstanceOf(InternalError);
    expect(error).toMatchObject({ reason: "CursorStuck" });
    expect(voter.requests).toHaveLength(1);
  }, 5_000);

  it("throws a typed error, not a TypeError, for a malformed page", async () => {
    for (const page of [{ items: 5 }, { items: [], remaining: "b" }, {}]) {
      const { client } = await scripted(page);
      const error = await settle(client.bulkGetAll(["a", "b"]));
      expect(error, JSON.stringify(page)).toBeInstanceOf(InternalError);
      expect(error).toMatchObject({ reason: "UnexpectedAnswer" });
    }
  }, 5_000);
});

/** What a pager ends with: its error, or a note that it was still going after many items. */
async function settle(items: AsyncIterable<unknown>): Promise<unknown> {
  let n = 0;
  try {
    for await (const _item of items) if (++n > 1_000) return "still going after 1000 items";
  } catch (error) {
    return error;
  }
  return "ended";
}
