import { describe, expect, it } from "vitest";
import type { Entry, Message } from "../raft/types.js";
import { HeldAppendOutbox } from "./held-append-outbox.js";

const entry: Entry = { index: 5, term: 1, type: "normal", data: new Uint8Array() };
const append = (to: string, commit: number, entries: Entry[] = []): Message => ({
  type: "append",
  from: "a",
  to,
  term: 1,
  index: 4,
  logTerm: 1,
  entries,
  commit,
  epoch: 1,
});
const heartbeat = (to: string): Message => ({
  type: "heartbeat",
  from: "a",
  to,
  term: 1,
  commit: 4,
  readRound: 0,
});

function outbox(): { box: HeldAppendOutbox; sent: Message[] } {
  const sent: Message[] = [];
  return { box: new HeldAppendOutbox((m) => sent.push(m)), sent };
}

describe("HeldAppendOutbox", () => {
  it("holds a leader's entry-less append", () => {
    const { box, sent } = outbox();
    box.send(append("b", 4), true);
    expect(sent).toEqual([]);
  });

  it("sends an entry-less append at once when not leading", () => {
    const { box, sent } = outbox();
    const m = append("b", 4);
    box.send(m, false);
    expect(sent).toEqual([m]);
  });

  it("sends an append with entries at once and drops the append it supersedes", () => {
    const { box, sent } = outbox();
    box.send(append("b", 3), true);
    const next = append("b", 4, [entry]);
    box.send(next, true);
    expect(sent).toEqual([next]);
    box.release("b");
    expect(sent).toEqual([next]);
  });

  it("keeps only the latest entry-less append per follower", () => {
    const { box, sent } = outbox();
    box.send(append("b", 3), true);
    const latest = append("b", 4);
    box.send(latest, true);
    box.release("b");
    expect(sent).toEqual([latest]);
  });

  it("sends a held append before any other message to the same follower", () => {
    const { box, sent } = outbox();
    const held = append("b", 4);
    box.send(held, true);
    const hb = heartbeat("b");
    box.send(hb, true);
    expect(sent).toEqual([held, hb]);
    // Sent once only.
    box.send(heartbeat("b"), true);
    expect(sent.filter((m) => m === held)).toHaveLength(1);
  });

  it("keeps followers apart", () => {
    const { box, sent } = outbox();
    const forB = append("b", 4);
    box.send(forB, true);
    const hb = heartbeat("c");
    box.send(hb, true);
    expect(sent).toEqual([hb]);
    box.release("c");
    expect(sent).toEqual([hb]);
    box.release("b");
    expect(sent).toEqual([hb, forB]);
  });

  it("clear drops every held append", () => {
    const { box, sent } = outbox();
    box.send(append("b", 4), true);
    box.send(append("c", 4), true);
    box.clear();
    box.release("b");
    box.send(heartbeat("c"), true);
    expect(sent.map((m) => m.type)).toEqual(["heartbeat"]);
  });
});
