import { describe, expect, it } from "vitest";
import type { Entry, Message } from "../raft/types.js";
import { HeldAppendOutbox } from "./held-append-outbox.js";

const entry: Entry = { index: 5, term: 1, type: "normal", data: new Uint8Array() };
/** An entry-less append is a commit notice unless `probe`. */
const append = (to: string, commit: number, entries: Entry[] = [], probe = false): Message => ({
  type: "append",
  from: "a",
  to,
  term: 1,
  index: 4,
  logTerm: 1,
  entries,
  commit,
  epoch: 1,
  ...(entries.length === 0 && !probe ? { commitNotice: true as const } : {}),
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

  it("sends an entry-less probe at once, as it asks the follower to check its log", () => {
    const { box, sent } = outbox();
    const probe = append("b", 4, [], true);
    box.send(probe, true);
    expect(sent).toEqual([probe]);
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

  it("releases by a voter's name what is held for any member it runs, as the forward handler does", () => {
    const { box, sent } = outbox();
    // voter2 was replaced: its member ID is a new incarnation's, while the leader hears it, forwarding
    // a command, by its name (forwardHandler's `from`).
    const forVoter2 = append("voter2~0a1b2c3d", 4);
    const forVoter3 = append("voter3", 4);
    box.send(forVoter2, true);
    box.send(forVoter3, true);
    box.release("voter2");
    expect(sent).toEqual([forVoter2]);
    box.release("voter3");
    expect(sent).toEqual([forVoter2, forVoter3]);
  });

  it("releases by member ID only that member's append", () => {
    const { box, sent } = outbox();
    const forNew = append("voter2~0a1b2c3d", 4);
    const forOther = append("voter22", 4);
    box.send(forNew, true);
    box.send(forOther, true);
    box.release("voter2~0a1b2c3d");
    expect(sent).toEqual([forNew]);
    box.release("voter2");
    expect(sent).toEqual([forNew]);
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
