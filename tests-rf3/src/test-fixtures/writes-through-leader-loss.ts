import type { KeyLoadClient } from "@keyload/client";
import { expect } from "vitest";
import { SentCommandIds } from "./sent-command-ids.js";

export interface LeaderLossOptions {
  /** Sends the writes; it lists the leader first, then the survivors. */
  readonly client: KeyLoadClient;
  /** Reads the outcome back from the survivors. */
  readonly reader: KeyLoadClient;
  /** Names the keys (`<prefix>/i`), the queue (`<prefix>-queue`) and the command IDs. */
  readonly prefix: string;
  /** How long the writes are on their way before the leader goes. */
  readonly inFlightMs: number;
  /** Stops or kills the leader. */
  readonly loseLeader: () => Promise<unknown>;
}

const COUNT = 10;

/**
 * Puts and enqueues `COUNT` writes, loses the leader while they are in flight, and checks that every
 * write succeeded, that at least one went out more than once (else the checks prove nothing about
 * retries), and that each applied exactly once: a second application would make a document's version
 * 2 or enqueue a second message with the same body. Returns the puts' results.
 */
export async function writeThroughLeaderLoss(options: LeaderLossOptions) {
  const { client, reader, prefix } = options;
  const sent = new SentCommandIds();
  const puts = Array.from({ length: COUNT }, (_, i) =>
    client.put(`${prefix}/${i}`, { i }, { commandId: `${prefix}-put-${i}` }),
  );
  const enqueues = Array.from({ length: COUNT }, (_, i) =>
    client.enqueue(`${prefix}-queue`, { i }, { commandId: `${prefix}-enq-${i}` }),
  );
  await new Promise((resolve) => setTimeout(resolve, options.inFlightMs));
  await options.loseLeader();
  const settled = await Promise.allSettled([...puts, ...enqueues]);
  sent.close();
  expect(settled.filter((s) => s.status === "rejected")).toEqual([]);
  const ids = Array.from({ length: COUNT }, (_, i) => [`${prefix}-put-${i}`, `${prefix}-enq-${i}`]).flat();
  expect(ids.filter((id) => sent.count(id) > 1).length).toBeGreaterThan(0);
  const putResults = await Promise.all(puts);
  const enqueueResults = await Promise.all(enqueues);

  for (let i = 0; i < COUNT; i++) {
    const key = `${prefix}/${i}`;
    expect(putResults[i]).toEqual({ commandId: `${prefix}-put-${i}`, key, version: 1 });
    expect(await reader.get(key)).toEqual({ key, value: { i }, version: 1 });
    expect(await reader.getCommand(`${prefix}-put-${i}`)).toMatchObject({
      status: "committed",
      result: { version: 1 },
    });
  }
  const lease = await reader.lease<{ i: number }>(`${prefix}-queue`, { max: 100 });
  expect(lease.messages.map((m) => m.body.i).sort((a, b) => a - b)).toEqual(
    Array.from({ length: COUNT }, (_, i) => i),
  );
  expect(new Set(lease.messages.map((m) => m.messageId))).toEqual(
    new Set(enqueueResults.map((r) => r.messageId)),
  );
  return { count: COUNT, putResults };
}
