import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Entry, MAX_TERM, type Message, type SnapshotMeta } from "../raft/types.js";
import { PeerProtocolError } from "./peer-errors.js";
import { decodeRaftMessage, encodeRaftMessage } from "./raft-message-codec.js";
import { anyMessage, appendOf, messageArbitraries } from "./test-fixtures/raft-message-arbitrary.js";

const samples: Message[] = [
  appendOf(3, 5),
  {
    type: "append-response",
    from: "a",
    to: "b",
    term: 3,
    index: 9,
    reject: true,
    rejectHint: 4,
    logTerm: 2,
    epoch: 5,
  },
  { type: "vote", from: "a", to: "b", term: 3, index: 9, logTerm: 2, transfer: true, confIndex: 7 },
  { type: "pre-vote", from: "a", to: "b", term: 3, index: 9, logTerm: 2, transfer: false, confIndex: 0 },
  { type: "vote-response", from: "a", to: "b", term: 3, reject: false },
  { type: "pre-vote-response", from: "a", to: "b", term: 3, reject: true },
  { type: "heartbeat", from: "a", to: "b", term: 3, commit: 8, readRound: 2 },
  { type: "heartbeat-response", from: "a", to: "b", term: 3, readRound: 2, unchecked: true },
  {
    type: "snapshot-chunk",
    from: "a",
    to: "b",
    term: 3,
    meta: { index: 100, term: 2, conf: { voters: ["a", "b", "c"], learners: ["d"] } },
    offset: 0,
    length: 3,
    totalBytes: 3,
    checksum: 0xdeadbeef,
    data: new Uint8Array([1, 2, 3]),
    epoch: 4,
  },
  {
    type: "snapshot-chunk-response",
    from: "a",
    to: "b",
    term: 3,
    snapshotIndex: 100,
    snapshotTerm: 2,
    nextOffset: 3,
    reject: false,
  },
  { type: "read-index", from: "a", to: "b", term: 3, requestId: "r-1" },
  { type: "read-index-response", from: "a", to: "b", term: 3, requestId: "r-1", index: 5, reject: false },
  { type: "timeout-now", from: "a", to: "b", term: 3 },
];

function protocolError(run: () => unknown): PeerProtocolError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(PeerProtocolError);
    expect((error as PeerProtocolError).code).toBe("PeerProtocol");
    return error as PeerProtocolError;
  }
  throw new Error("expected a PeerProtocolError");
}

describe("raft message codec", () => {
  it("has a fixed sample of every message type", () => {
    expect(new Set(samples.map((m) => m.type))).toEqual(new Set(Object.keys(messageArbitraries)));
  });

  for (const [type, arbitrary] of Object.entries(messageArbitraries)) {
    it(`round-trips random ${type} messages`, () => {
      fc.assert(
        fc.property(arbitrary, (message) => {
          expect(decodeRaftMessage(encodeRaftMessage(message))).toEqual(message);
        }),
        { numRuns: 150 },
      );
    });
  }

  it("decodes entry data as views into the frame, without copying", () => {
    const frame = encodeRaftMessage(appendOf(4, 100));
    const decoded = decodeRaftMessage(frame);
    if (decoded.type !== "append") throw new Error("not an append");
    for (const entry of decoded.entries) {
      expect(entry.data.buffer).toBe(frame.buffer);
      expect(entry.data.constructor).toBe(Uint8Array);
    }
  });

  it("refuses an entry whose bytes do not match the checksum it was sent with", () => {
    const append = Buffer.from(encodeRaftMessage(appendOf(2, 64)));
    expect(decodeRaftMessage(append)).toMatchObject({ entries: [{ index: 1001 }, { index: 1002 }] });
    // A bit of the second entry's data, as a faulty sender's memory or a bad NIC could change it.
    append[append.length - 10]! ^= 0x04;
    expect(protocolError(() => decodeRaftMessage(append)).message).toMatch(
      /entry 1002 does not match the checksum it was sent with/,
    );
  });

  it("is compact: a heartbeat takes a dozen bytes, an entry a few bytes beyond its data", () => {
    expect(encodeRaftMessage(samples[6]!).length).toBeLessThanOrEqual(12);
    const oneEntry = encodeRaftMessage(appendOf(1, 1024)).length;
    const twoEntries = encodeRaftMessage(appendOf(2, 1024)).length;
    // Its term, index, type, length and checksum.
    expect(twoEntries - oneEntry).toBeLessThanOrEqual(1024 + 12);
  });

  it("refuses to encode numbers that are not non-negative safe integers", () => {
    for (const term of [-1, 1.5, Number.NaN, 2 ** 53, Number.POSITIVE_INFINITY]) {
      protocolError(() => encodeRaftMessage({ type: "timeout-now", from: "a", to: "b", term }));
    }
  });

  it("refuses a term beyond MAX_TERM, which would leave the cluster no term to campaign in", () => {
    const at = (term: number) =>
      encodeRaftMessage({
        type: "heartbeat-response",
        from: "a",
        to: "b",
        term,
        readRound: 0,
        unchecked: false,
      });
    expect(decodeRaftMessage(at(MAX_TERM))).toMatchObject({ term: MAX_TERM });
    protocolError(() => decodeRaftMessage(at(MAX_TERM + 1)));
    protocolError(() => decodeRaftMessage(at(Number.MAX_SAFE_INTEGER)));
  });

  it("sends a snapshot chunk only with its bytes, and refuses one that ends past its snapshot", () => {
    const chunk = samples.find((m) => m.type === "snapshot-chunk")!;
    expect(() => encodeRaftMessage({ ...chunk, data: null })).toThrow(PeerProtocolError);
    expect(() => encodeRaftMessage({ ...chunk, length: 4 })).toThrow(PeerProtocolError);
    const decoded = decodeRaftMessage(encodeRaftMessage(chunk));
    expect(decoded).toMatchObject({ length: 3, checksum: 0xdeadbeef });
    const beyond = encodeRaftMessage({ ...chunk, offset: 1 });
    expect(() => decodeRaftMessage(beyond)).toThrow(/beyond the snapshot's 3 bytes/);
  });

  it("refuses an append whose entries do not follow its index, or whose terms cannot be a log's", () => {
    const valid = appendOf(3, 4);
    if (valid.type !== "append") throw new Error("not an append");
    expect(decodeRaftMessage(encodeRaftMessage(valid))).toEqual(valid);
    const [first, second, third] = valid.entries as [Entry, Entry, Entry];
    const refused: [string, Message, RegExp][] = [
      // The anchor entry repeated, with a commit beyond it: the core would throw "commit N is beyond".
      ["the anchor repeated", { ...valid, entries: [{ ...first, index: 1000 }], commit: 1001 }, /follow/],
      ["a gap after the anchor", { ...valid, entries: [{ ...first, index: 1002 }] }, /follow/],
      ["a gap between entries", { ...valid, entries: [first, { ...third, index: 1003 }] }, /follow/],
      ["an entry repeated", { ...valid, entries: [first, first, second] }, /follow/],
      ["an entry of term 0", { ...valid, logTerm: 0, entries: [{ ...first, term: 0 }] }, /term 0/],
      [
        "an entry of a later term",
        { ...valid, entries: [{ ...first, term: 8 }] },
        /beyond the message's term/,
      ],
      ["decreasing entry terms", { ...valid, term: 9, entries: [{ ...first, term: 8 }, second] }, /decreas/],
      [
        "an entry older than the anchor",
        { ...valid, logTerm: 7, entries: [{ ...first, term: 6 }] },
        /decreas/,
      ],
      ["an anchor of a later term", { ...valid, logTerm: 8, entries: [] }, /beyond the message's term/],
    ];
    for (const [name, message, pattern] of refused) {
      expect(protocolError(() => decodeRaftMessage(encodeRaftMessage(message))).message, name).toMatch(
        pattern,
      );
    }
    // A heartbeat-like append with no entries, and the first append of a log, are fine.
    expect(decodeRaftMessage(encodeRaftMessage({ ...valid, entries: [] }))).toMatchObject({ entries: [] });
    const fromStart = { ...valid, index: 0, logTerm: 0, entries: [{ ...first, index: 1, term: 1 }] };
    expect(decodeRaftMessage(encodeRaftMessage(fromStart))).toEqual(fromStart);
  });

  it("refuses snapshot metadata no snapshot can have", () => {
    const chunk = samples.find((m) => m.type === "snapshot-chunk")!;
    if (chunk.type !== "snapshot-chunk") throw new Error("not a chunk");
    const withMeta = (meta: Partial<SnapshotMeta>): Message => ({
      ...chunk,
      meta: { ...chunk.meta, ...meta },
    });
    const conf = (voters: string[], learners?: string[]) => ({
      conf: learners ? { voters, learners } : { voters },
    });
    const refused: [string, Message, RegExp][] = [
      ["index 0", withMeta({ index: 0 }), /index 0/],
      ["term 0", withMeta({ term: 0 }), /term 0/],
      ["a term beyond the message's", withMeta({ term: 4 }), /beyond the message's term/],
      ["no voters", withMeta(conf([])), /no voters/],
      ["no voters but a learner", withMeta(conf([], ["d"])), /no voters/],
      ["a voter named twice", withMeta(conf(["a", "b", "a"])), /"a" twice/],
      ["a voter also a learner", withMeta(conf(["a", "b"], ["b"])), /"b" twice/],
      ["a learner named twice", withMeta(conf(["a"], ["d", "d"])), /"d" twice/],
      ["an empty name", withMeta(conf(["a", ""])), /not a member ID/],
      ["a name with a space", withMeta(conf(["a b"])), /not a member ID/],
      ["a bad incarnation", withMeta(conf(["a~zz"])), /not a member ID/],
      ["a learner's bad name", withMeta(conf(["a"], ["x".repeat(65)])), /not a member ID/],
    ];
    for (const [name, message, pattern] of refused) {
      expect(protocolError(() => decodeRaftMessage(encodeRaftMessage(message))).message, name).toMatch(
        pattern,
      );
    }
    // The message names a long bad name by a short prefix only: it ends up in a log line.
    const long = withMeta(conf(["y".repeat(5000)]));
    expect(protocolError(() => decodeRaftMessage(encodeRaftMessage(long))).message.length).toBeLessThan(200);
    const incarnations = withMeta({ term: 3, ...conf(["a", "b~0a1b2c3d"], ["b"]) });
    expect(decodeRaftMessage(encodeRaftMessage(incarnations))).toEqual(incarnations);
  });

  it("refuses every truncation and any trailing byte", () => {
    for (const message of samples) {
      const frame = encodeRaftMessage(message);
      for (let length = 0; length < frame.length; length++) {
        protocolError(() => decodeRaftMessage(frame.subarray(0, length)));
      }
      const longer = new Uint8Array(frame.length + 1);
      longer.set(frame);
      expect(protocolError(() => decodeRaftMessage(longer)).message).toMatch(/trailing/);
    }
  });

  it("refuses unknown tags, invalid booleans and entry types, bad varints and bad UTF-8", () => {
    const header = [1, 97, 1, 98, 3]; // from "a", to "b", term 3, after the tag
    expect(protocolError(() => decodeRaftMessage(Uint8Array.from([99, ...header]))).message).toMatch(
      /unknown Raft message tag 99/,
    );
    const voteResponse = (flag: number) => Uint8Array.from([5, ...header, flag]);
    expect(decodeRaftMessage(voteResponse(1))).toMatchObject({ reject: true });
    expect(protocolError(() => decodeRaftMessage(voteResponse(2))).message).toMatch(/boolean/);
    // append: index 0, logTerm 0, one entry (term 1, index 1, type 7, no data, checksum), commit 0
    const badEntry = Uint8Array.from([1, ...header, 0, 0, 1, 1, 1, 7, 0, 0, 0, 0, 0, 0]);
    expect(protocolError(() => decodeRaftMessage(badEntry)).message).toMatch(/entry type 7/);
    const heartbeat = (...term: number[]) => Uint8Array.from([7, 1, 97, 1, 98, ...term, 0, 0]);
    expect(decodeRaftMessage(heartbeat(0x81, 0x01)).term).toBe(129);
    expect(protocolError(() => decodeRaftMessage(heartbeat(0x81, 0x00))).message).toMatch(/overlong/);
    const tooBig = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x10];
    expect(protocolError(() => decodeRaftMessage(heartbeat(...tooBig))).message).toMatch(/2\^53/);
    const tooLong = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
    expect(protocolError(() => decodeRaftMessage(heartbeat(...tooLong))).message).toMatch(/longer than 8/);
    const badUtf8 = Uint8Array.from([13, 2, 0xc3, 0x28, 1, 98, 3]);
    expect(protocolError(() => decodeRaftMessage(badUtf8)).message).toMatch(/UTF-8/);
  });

  it("refuses an entry count larger than the frame could hold, before looping over it", () => {
    const frame = Uint8Array.from([...[1, 1, 97, 1, 98, 3], 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0]);
    expect(protocolError(() => decodeRaftMessage(frame)).message).toMatch(/count/);
  });

  it("turns arbitrary bytes into a PeerProtocolError or a message that re-encodes to the same bytes", () => {
    const mutated = fc
      .tuple(anyMessage, fc.nat(), fc.integer({ min: 0, max: 255 }))
      .map(([message, at, byte]) => {
        const frame = Uint8Array.from(encodeRaftMessage(message));
        if (frame.length > 0) frame[at % frame.length] = byte;
        return frame;
      });
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), mutated), (bytes) => {
        let decoded: Message;
        try {
          decoded = decodeRaftMessage(bytes);
        } catch (error) {
          expect(error).toBeInstanceOf(PeerProtocolError);
          return;
        }
        // Encodings are canonical, so whatever is accepted is exactly a valid message's encoding.
        expect(Buffer.from(encodeRaftMessage(decoded)).equals(bytes)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});
