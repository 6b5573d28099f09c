import { afterEach, describe, expect, it, vi } from "vitest";
import type { Entry, Message } from "../raft/types.js";
import { CommitNotices } from "./commit-notices.js";

const entry: Entry = { index: 6, term: 2, type: "normal", data: new Uint8Array([1]) };

function append(to: string, commit: number, entries: readonly Entry[] = []): Message {
  return { type: "append", from: "n1", to, term: 2, index: 5, logTerm: 2, entries, commit };
}

function heartbeat(to: string): Message {
  return { type: "heartbeat", from: "n1", to, term: 2, commit: 5, readRound: 0 };
}

function notices(): { sent: Message[]; notices: CommitNotices } {
  const sent: Message[] = [];
  return { sent, notices: new CommitNotices({ send: (m) => sent.push(m) }, 5) };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("CommitNotices", () => {
  it("lets an append with entries replace the empty one held for the same follower", () => {
    const { sent, notices: n } = notices();
    n.send(append("n2", 4));
    n.send(append("n3", 4));
    n.send(append("n2", 5, [entry]));
    expect(sent).toEqual([append("n2", 5, [entry])]);
    n.sendHeld();
    expect(sent).toEqual([append("n2", 5, [entry]), append("n3", 4)]);
  });

  it("keeps only the latest empty append, and sends it ahead of any other message to that follower", () => {
    const { sent, notices: n } = notices();
    n.send(append("n2", 4));
    n.send(append("n2", 5));
    n.send(heartbeat("n2"));
    expect(sent).toEqual([append("n2", 5), heartbeat("n2")]);
  });

  it("sends what it holds once the hold time is up, and nothing after clear", () => {
    vi.useFakeTimers();
    const { sent, notices: n } = notices();
    n.send(append("n2", 4));
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(5);
    expect(sent).toEqual([append("n2", 4)]);
    n.send(append("n3", 5));
    n.clear();
    vi.advanceTimersByTime(5);
    expect(sent).toEqual([append("n2", 4)]);
  });
});
