import fc from "fast-check";
import { type Entry, MAX_TERM, type Message, type SnapshotMeta } from "../../raft/types.js";

const uint = fc.oneof(fc.nat(300), fc.maxSafeNat());
/** A message's term: any a message may carry (MAX_TERM). */
const term = fc.oneof(fc.nat(300), fc.nat({ max: MAX_TERM }));
const text = fc.oneof(
  fc.string({ unit: "grapheme-ascii", maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 200 }),
);
const data = fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ minLength: 127, maxLength: 300 }));

const base = { from: text, to: text, term };

const MAX_ENTRIES = 6;

/** The type and data of an entry; its index and term depend on the append it is in. */
const entryBody = fc.record({
  type: fc.constantFrom("normal" as const, "noop" as const, "conf" as const),
  data,
});

/** `count` terms from `min` to `max`, never decreasing, as along a log; none when `max` is 0. */
function logTerms(count: number, min: number, max: number): fc.Arbitrary<number[]> {
  if (max === 0) return fc.constant([]);
  return fc
    .array(fc.integer({ min, max }), { minLength: count, maxLength: count })
    .map((terms) => terms.sort((a, b) => a - b));
}

/**
 * An append as a leader sends it: entries from index + 1 on, their terms from the anchor's up to the
 * message's, never decreasing.
 */
const append: fc.Arbitrary<Message> = fc
  .record({
    ...base,
    index: fc.oneof(fc.nat(300), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER - MAX_ENTRIES })),
    bodies: fc.array(entryBody, { maxLength: MAX_ENTRIES }),
    commit: uint,
    epoch: uint,
  })
  .chain(({ bodies, ...m }) =>
    fc.integer({ min: 0, max: m.term }).chain((logTerm) =>
      logTerms(bodies.length, Math.max(1, logTerm), m.term).map((terms): Message => {
        const entries = terms.map((term, i): Entry => ({ term, index: m.index + 1 + i, ...bodies[i]! }));
        return { type: "append", ...m, logTerm, entries };
      }),
    ),
  );

const memberId = fc.stringMatching(/^[A-Za-z0-9._-]{1,64}(~[0-9a-f]{8})?$/);

/** Metadata a snapshot taken at term `upTo` or before can have: distinct members, one voter at least. */
function metaUpTo(upTo: number): fc.Arbitrary<SnapshotMeta> {
  return fc.record({
    index: fc.oneof(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })),
    term: fc.integer({ min: 1, max: upTo }),
    conf: fc
      .tuple(fc.uniqueArray(memberId, { minLength: 1, maxLength: 8 }), fc.nat())
      .map(([members, split]) => {
        const voterCount = 1 + (split % members.length);
        const learners = members.slice(voterCount);
        const voters = members.slice(0, voterCount);
        return learners.length === 0 ? { voters } : { voters, learners };
      }),
  });
}

/** One arbitrary per message type, so a test can insist that every type is covered. */
export const messageArbitraries: Record<Message["type"], fc.Arbitrary<Message>> = {
  append,
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
    confIndex: uint,
  }),
  "pre-vote": fc.record({
    type: fc.constant("pre-vote" as const),
    ...base,
    index: uint,
    logTerm: uint,
    transfer: fc.boolean(),
    confIndex: uint,
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
    unchecked: fc.boolean(),
  }),
  "snapshot-chunk": fc
    .record({
      from: text,
      to: text,
      // A leader's term, at least that of any snapshot it sends.
      term: fc.oneof(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: MAX_TERM })),
      offset: fc.nat({ max: 1 << 30 }),
      beyond: fc.nat({ max: 1 << 30 }),
      checksum: fc.nat({ max: 0xffff_ffff }),
      data,
      epoch: uint,
    })
    .chain(({ beyond, ...m }) =>
      metaUpTo(m.term).map(
        (meta): Message => ({
          type: "snapshot-chunk",
          ...m,
          meta,
          length: m.data.byteLength,
          totalBytes: m.offset + m.data.byteLength + beyond,
        }),
      ),
    ),
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
