import fc from "fast-check";
import type { Entry, Message, SnapshotMeta } from "../../raft/types.js";

const uint = fc.oneof(fc.nat(300), fc.maxSafeNat());
const text = fc.oneof(
  fc.string({ unit: "grapheme-ascii", maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 200 }),
);
const data = fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ minLength: 127, maxLength: 300 }));

const base = { from: text, to: text, term: uint };

const entry: fc.Arbitrary<Entry> = fc.record({
  term: uint,
  index: uint,
  type: fc.constantFrom("normal" as const, "noop" as const, "conf" as const),
  data,
});

const meta: fc.Arbitrary<SnapshotMeta> = fc.record({
  index: uint,
  term: uint,
  conf: fc.oneof(
    fc.record({ voters: fc.array(text, { maxLength: 5 }) }),
    fc.record({
      voters: fc.array(text, { maxLength: 5 }),
      learners: fc.array(text, { minLength: 1, maxLength: 3 }),
    }),
  ),
});

/** One arbitrary per message type, so a test can insist that every type is covered. */
export const messageArbitraries: Record<Message["type"], fc.Arbitrary<Message>> = {
  append: fc.record({
    type: fc.constant("append" as const),
    ...base,
    index: uint,
    logTerm: uint,
    entries: fc.array(entry, { maxLength: 6 }),
    commit: uint,
    epoch: uint,
  }),
  "append-response": fc.record({
    type: fc.constant("append-response" as const),
    ...base,
    index: uint,
    reject: fc.boolean(),
    rejectHint: uint,
    logTerm: uint,
    epoch: uint,
  }),
  vote: fc.record({
    type: fc.constant("vote" as const),
    ...base,
    index: uint,
    logTerm: uint,
    transfer: fc.boolean(),
  }),
  "pre-vote": fc.record({
    type: fc.constant("pre-vote" as const),
    ...base,
    index: uint,
    logTerm: uint,
    transfer: fc.boolean(),
  }),
  "vote-response": fc.record({ type: fc.constant("vote-response" as const), ...base, reject: fc.boolean() }),
  "pre-vote-response": fc.record({
    type: fc.constant("pre-vote-response" as const),
    ...base,
    reject: fc.boolean(),
  }),
  heartbeat: fc.record({ type: fc.constant("heartbeat" as const), ...base, commit: uint, readRound: uint }),
  "heartbeat-response": fc.record({
    type: fc.constant("heartbeat-response" as const),
    ...base,
    readRound: uint,
  }),
  "snapshot-chunk": fc
    .record({
      type: fc.constant("snapshot-chunk" as const),
      ...base,
      meta,
      offset: fc.nat({ max: 1 << 30 }),
      beyond: fc.nat({ max: 1 << 30 }),
      checksum: fc.nat({ max: 0xffff_ffff }),
      data,
    })
    .map(({ beyond, ...m }) => ({
      ...m,
      length: m.data.byteLength,
      totalBytes: m.offset + m.data.byteLength + beyond,
    })),
  "snapshot-chunk-response": fc.record({
    type: fc.constant("snapshot-chunk-response" as const),
    ...base,
    snapshotIndex: uint,
    snapshotTerm: uint,
    nextOffset: uint,
    reject: fc.boolean(),
  }),
  "read-index": fc.record({ type: fc.constant("read-index" as const), ...base, requestId: text }),
  "read-index-response": fc.record({
    type: fc.constant("read-index-response" as const),
    ...base,
    requestId: text,
    index: uint,
    reject: fc.boolean(),
  }),
  "timeout-now": fc.record({ type: fc.constant("timeout-now" as const), ...base }),
};

export const anyMessage: fc.Arbitrary<Message> = fc.oneof(...Object.values(messageArbitraries));

/** A typical replication message: `count` entries of `size` bytes each. */
export function appendOf(count: number, size: number): Message {
  const entries: Entry[] = [];
  for (let i = 0; i < count; i++) {
    entries.push({ term: 7, index: 1001 + i, type: "normal", data: new Uint8Array(size).fill(i) });
  }
  return {
    type: "append",
    from: "voter1",
    to: "voter2",
    term: 7,
    index: 1000,
    logTerm: 7,
    entries,
    commit: 990,
    epoch: 3,
  };
}
