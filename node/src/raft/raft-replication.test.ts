import { describe, expect, it } from "vitest";
import { entrySize } from "./log-storage.js";
import {
  append,
  appendResponse,
  entriesWithTerms,
  entry,
  heartbeat,
  heartbeatResponse,
  ofType,
  Solo,
  soloLeader,
  storageWithLog,
} from "./test-fixtures/helpers.js";
import { InMemoryRaftCluster, text } from "./test-fixtures/in-memory-raft-cluster.js";
import { checkLogMatching, InvariantChecker } from "./test-fixtures/invariants.js";
import type { AppendMessage, Message } from "./types.js";

const VOTERS = ["a", "b", "c"];

/** Follower "a" of leader "b" at `term`, holding entries with the given terms. */
function follower(terms: number[], term: number, commit = 0): Solo {
  return new Solo({ storage: storageWithLog(VOTERS, terms, { term, commit }) });
}

const appendsTo = (ms: readonly Message[], to: string, withEntries = true): AppendMessage[] =>
  ms.filter(
    (m): m is AppendMessage => m.type === "append" && m.to === to && (!withEntries || m.entries.length > 0),
  );

const payload = (n: number): Uint8Array => new Uint8Array(n).fill(7);

describe("AppendEntries on the follower", () => {
  it("takes back an acknowledgement of entries a newer leader replaced before they were persisted", () => {
    const s = follower([1, 1, 1], 2);
    // Both appends arrive before the next Ready: the term-3 leader's entry replaces 4..6 in memory.
    const h = s.step(
      append("b", "a", 2, 3, 1, [entry(4, 2), entry(5, 2), entry(6, 2)], 0),
      append("c", "a", 3, 3, 1, [entry(4, 3)], 0),
    );
    expect(s.terms()).toEqual([1, 1, 1, 3]);
    // Sent after that Ready is persisted, an acknowledgement of 6 in term 2 would count a copy of 5
    // and 6 that "a" never holds toward the term-2 leader's quorum.
    expect(ofType(h.messages, "append-response").filter((m) => !m.reject)).toEqual([
      expect.objectContaining({ to: "c", term: 3, index: 4 }),
    ]);
  });

  it("rejects when the follower lacks the previous entry, with a hint, leaving the log alone", () => {
    const s = follower([1, 1], 1);
    const h = s.step(append("b", "a", 1, 3, 1, [entry(4, 1)], 0, 3));
    expect(ofType(h.messages, "append-response")).toEqual([
      {
        type: "append-response",
        from: "a",
        to: "b",
        term: 1,
        index: 3,
        reject: true,
        rejectHint: 2,
        logTerm: 1,
        epoch: 3,
      },
    ]);
    expect(s.terms()).toEqual([1, 1]);
    expect(h.entries).toEqual([]);
  });

  it("rejects when the previous entry's term differs", () => {
    const s = follower([1, 1, 1], 2);
    const h = s.step(append("b", "a", 2, 3, 2, [entry(4, 2)], 0));
    expect(ofType(h.messages, "append-response")).toMatchObject([
      { reject: true, index: 3, rejectHint: 3, logTerm: 1 },
    ]);
    expect(s.terms()).toEqual([1, 1, 1]);
  });

  it("accepts after a match and acknowledges the last new index", () => {
    const s = follower([1, 1], 1);
    const h = s.step(append("b", "a", 1, 2, 1, entriesWithTerms([1, 1], 3), 0, 2));
    expect(ofType(h.messages, "append-response")).toMatchObject([{ reject: false, index: 4, epoch: 2 }]);
    expect(h.entries.map((e) => e.index)).toEqual([3, 4]);
    expect(s.terms()).toEqual([1, 1, 1, 1]);
  });

  it("truncates a conflicting suffix and replaces it", () => {
    const s = follower([1, 1, 2, 2, 2], 3);
    const h = s.step(append("b", "a", 3, 2, 1, [entry(3, 3, "new")], 0));
    expect(ofType(h.messages, "append-response")).toMatchObject([{ reject: false, index: 3 }]);
    expect(h.entries.map((e) => `${e.index}@${e.term}`)).toEqual(["3@3"]);
    expect(s.terms()).toEqual([1, 1, 3]);
  });

  it("keeps entries after the new ones when nothing conflicts", () => {
    const s = follower([1, 1, 2, 2], 2);
    const h = s.step(append("b", "a", 2, 1, 1, [entry(2, 1, "e2")], 0));
    expect(ofType(h.messages, "append-response")).toMatchObject([{ reject: false, index: 2 }]);
    expect(h.entries).toEqual([]);
    expect(s.terms()).toEqual([1, 1, 2, 2]);
  });

  it("never truncates committed entries: an append behind the commit is answered with the commit", () => {
    const s = follower([1, 1, 2, 2], 3, 3);
    const h = s.step(append("b", "a", 3, 1, 1, entriesWithTerms([3, 3], 2), 3));
    expect(ofType(h.messages, "append-response")).toMatchObject([{ reject: false, index: 3 }]);
    expect(s.terms()).toEqual([1, 1, 2, 2]);
    expect(s.node.status().commit).toBe(3);
  });

  it("commits min(leader commit, last new entry), never an unverified entry of its own", () => {
    // The follower holds entries 2..3 from an old term the leader may not have.
    const s = follower([1, 1, 1], 2);
    s.step(append("b", "a", 2, 0, 0, [entry(1, 1, "e1")], 3));
    expect(s.node.status().commit).toBe(1);
    s.step(append("b", "a", 2, 1, 1, [entry(2, 1, "e2")], 1));
    expect(s.node.status().commit).toBe(1);
    s.step(append("b", "a", 2, 2, 1, [entry(3, 1, "e3")], 3));
    expect(s.node.status().commit).toBe(3);
    // A later, lower leader commit does not move it back.
    s.step(append("b", "a", 2, 3, 1, [], 2));
    expect(s.node.status().commit).toBe(3);
  });

  it("commits on a heartbeat only as far as an append of its leader has checked its log", () => {
    // A follower whose data was restored from an old copy: entries 2 and 3 are a deposed term-2
    // leader's, which it had replaced with the term-3 leader's and acknowledged. That leader, believing
    // them matched, sends commit 3 (or, past the log, 10): committing them would apply what never
    // committed.
    const s = follower([1, 2, 2], 3, 1);
    for (const commit of [3, 10]) {
      const h = s.step(heartbeat("b", "a", 3, commit));
      expect(h.committed.filter((e) => e.index > 1)).toEqual([]);
      expect(h.messages).toEqual([expect.objectContaining({ type: "heartbeat-response", unchecked: true })]);
    }
    expect(s.node.status().commit).toBe(1);
    // The append the leader sends then finds the deposed entries, and its next replaces them.
    const probe = s.step(append("b", "a", 3, 3, 3, [], 3));
    expect(probe.messages).toEqual([expect.objectContaining({ type: "append-response", reject: true })]);
    const h = s.step(append("b", "a", 3, 1, 1, [entry(2, 3, "x2"), entry(3, 3, "x3")], 1));
    expect(h.committed.map((e) => `${e.index}@${e.term}`)).toEqual([]);
    // Checked now: the next heartbeat commits them, and asks for nothing.
    const hb = s.step(heartbeat("b", "a", 3, 3));
    expect(hb.committed.map((e) => `${e.index}@${e.term}`)).toEqual(["2@3", "3@3"]);
    expect(hb.messages).toEqual([expect.objectContaining({ type: "heartbeat-response", unchecked: false })]);
  });

  it("a new term's heartbeats commit nothing an earlier leader's appends checked", () => {
    const s = follower([], 1);
    s.step(append("b", "a", 1, 0, 0, entriesWithTerms([1, 1, 1]), 1));
    expect(s.node.status().commit).toBe(1);
    const h = s.step(heartbeat("c", "a", 2, 3));
    expect(h.committed.filter((e) => e.index > 1)).toEqual([]);
    expect(h.messages).toEqual([expect.objectContaining({ type: "heartbeat-response", unchecked: true })]);
  });

  it("hands out newly committed entries in order", () => {
    const s = follower([], 1);
    const h = s.step(append("b", "a", 1, 0, 0, entriesWithTerms([1, 1, 1]), 2));
    expect(h.committed.map((e) => e.index)).toEqual([1, 2]);
    const h2 = s.step(heartbeat("b", "a", 1, 3));
    expect(h2.committed.map((e) => e.index)).toEqual([3]);
  });
});

describe("replication from the leader", () => {
  it("replicates and applies proposals on every node in order", () => {
    const checker = new InvariantChecker();
    const c = new InMemoryRaftCluster(VOTERS, {}, 1, { onReady: checker.hook });
    c.elect("a");
    for (let i = 0; i < 20; i++) c.node("a").propose(text(`v${i}`));
    c.settle();
    c.tickAll(1);
    const expected = Array.from({ length: 20 }, (_, i) => `v${i}`);
    for (const id of VOTERS) expect(c.appliedData(id)).toEqual(expected);
    checkLogMatching(c);
  });

  it("heartbeats never tell a follower to commit past what it is known to hold", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("a");
    c.filter = (m) => !(m.type === "append" && m.to === "c");
    for (let i = 0; i < 3; i++) c.node("a").propose(text(`v${i}`));
    c.settle();
    expect(c.node("a").status().commit).toBe(4);
    const before = c.delivered.length;
    c.tickAll(1);
    const hb = c.delivered.slice(before).filter((m) => m.type === "heartbeat" && m.to === "c");
    expect(hb.length).toBeGreaterThan(0);
    for (const m of hb) expect((m as { commit: number }).commit).toBeLessThanOrEqual(1);
    expect(c.node("b").status().commit).toBe(4);
  });

  it("batches a backlog into messages of at most maxSizePerMsg (one oversized entry alone)", () => {
    const maxSizePerMsg = 250;
    const c = new InMemoryRaftCluster(VOTERS, { maxSizePerMsg });
    c.elect("a");
    c.isolate("c");
    for (let i = 0; i < 10; i++) c.node("a").propose(payload(76)); // 100 bytes each
    c.node("a").propose(payload(600)); // larger than a message on its own
    for (let i = 0; i < 3; i++) c.node("a").propose(payload(76));
    c.settle();
    c.heal();
    const before = c.delivered.length;
    c.tickAll(5);
    const sent = appendsTo(c.delivered.slice(before), "c");
    const total = sent.reduce((n, m) => n + m.entries.length, 0);
    expect(total).toBe(14);
    for (const m of sent) {
      const size = m.entries.reduce((n, e) => n + entrySize(e), 0);
      if (m.entries.length > 1) expect(size).toBeLessThanOrEqual(maxSizePerMsg);
    }
    expect(sent.some((m) => m.entries.length === 2)).toBe(true);
    expect(sent.some((m) => m.entries.length === 1 && m.entries[0]!.data.byteLength === 600)).toBe(true);
    expect(c.node("c").status().lastIndex).toBe(c.node("a").status().lastIndex);
  });

  it("pipelines at most maxInflightMsgs appends to a follower that does not answer", () => {
    const c = new InMemoryRaftCluster(VOTERS, { maxInflightMsgs: 3, maxInflightBytes: 0 });
    c.elect("a");
    expect(c.node("a").status().progress.c!.state).toBe("replicate");
    c.filter = (m) => m.from !== "c";
    const before = c.sent.length;
    for (let i = 0; i < 10; i++) {
      c.node("a").propose(text(`v${i}`));
      c.settle();
    }
    expect(appendsTo(c.sent.slice(before), "c").length).toBe(3);
    // b answers, so the proposals commit regardless.
    expect(c.node("a").status().commit).toBe(11);

    c.filter = () => true;
    c.tickAll(5);
    expect(c.node("c").status().lastIndex).toBe(11);
    expect(c.node("c").status().commit).toBe(11);
  });

  it("pipelines at most maxInflightBytes of entries to a follower that does not answer", () => {
    const c = new InMemoryRaftCluster(VOTERS, { maxInflightMsgs: 100, maxInflightBytes: 250 });
    c.elect("a");
    c.filter = (m) => m.from !== "c";
    const before = c.sent.length;
    for (let i = 0; i < 10; i++) {
      c.node("a").propose(payload(76)); // 100 bytes
      c.settle();
    }
    // 100 and 200 bytes are under the budget; the third message reaches it.
    expect(appendsTo(c.sent.slice(before), "c").length).toBe(3);
    c.filter = () => true;
    c.tickAll(5);
    expect(c.node("c").status().lastIndex).toBe(11);
  });

  it("an acknowledgement frees the window: with answers, everything flows", () => {
    const c = new InMemoryRaftCluster(VOTERS, { maxInflightMsgs: 2 });
    c.elect("a");
    for (let i = 0; i < 30; i++) c.node("a").propose(text(`v${i}`));
    c.settle();
    for (const id of VOTERS) expect(c.node(id).status().lastIndex).toBe(31);
    expect(c.node("a").status().commit).toBe(31);
  });

  it("probe state sends one append at a time until the follower answers", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    // c never answers appends: a never learns where c's log stands.
    c.filter = (m) => !(m.from === "c" && m.type === "append-response");
    c.elect("a");
    expect(c.node("a").status().progress.c!.state).toBe("probe");
    for (let i = 0; i < 5; i++) {
      c.node("a").propose(text(`v${i}`));
      c.settle();
    }
    expect(appendsTo(c.sent, "c", false).length).toBe(1);
    // Each heartbeat answer allows exactly one more probe.
    c.tickAll(3);
    expect(appendsTo(c.sent, "c", false).length).toBe(4);
    c.filter = () => true;
    c.tickAll(1);
    expect(c.node("a").status().progress.c!.state).toBe("replicate");
    expect(c.node("c").status().lastIndex).toBe(6);
  });

  it("answers a follower that asks for a check with an append, though it is known to be up to date", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("a");
    c.node("a").propose(text("v0"));
    c.settle();
    const { lastIndex } = c.node("a").status();
    expect(c.node("a").status().progress.b!.match).toBe(lastIndex);
    const before = c.sent.length;
    c.node("a").step(heartbeatResponse("b", "a", c.node("a").status().term, 0, true));
    c.deliverRound();
    const probes = appendsTo(c.sent.slice(before), "b", false);
    expect(probes).toHaveLength(1);
    // A probe, which a driver must not hold back as it may a commit notice.
    expect(probes[0]!.commitNotice).toBeUndefined();
  });

  it("marks an entry-less append that only moves the commit as a commit notice", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("a");
    const before = c.sent.length;
    c.node("a").propose(text("v0"));
    c.settle();
    const toB = appendsTo(c.sent.slice(before), "b", false);
    const withEntries = toB.filter((m) => m.entries.length > 0);
    const notices = toB.filter((m) => m.entries.length === 0);
    expect(withEntries.every((m) => m.commitNotice === undefined)).toBe(true);
    expect(notices.length).toBeGreaterThan(0);
    expect(notices.every((m) => m.commitNotice === true)).toBe(true);
    expect(notices.at(-1)!.commit).toBe(c.node("a").status().commit);
  });

  it("appends lost in flight are resent after a heartbeat, without new proposals", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("a");
    c.filter = (m) => !(m.type === "append" && m.to === "c");
    for (let i = 0; i < 3; i++) c.node("a").propose(text(`v${i}`));
    c.settle();
    expect(c.node("c").status().lastIndex).toBe(1);
    c.filter = () => true;
    c.tickAll(3);
    expect(c.node("c").status().lastIndex).toBe(4);
    expect(c.appliedData("c")).toEqual(["v0", "v1", "v2"]);
  });

  it("a follower whose whole inflight window was lost during a partition catches up after it heals", () => {
    const c = new InMemoryRaftCluster(VOTERS, { maxInflightMsgs: 2 });
    c.elect("a");
    c.isolate("c");
    for (let i = 0; i < 8; i++) {
      c.node("a").propose(text(`v${i}`));
      c.settle();
    }
    c.heal();
    c.tickAll(5);
    expect(c.node("c").status().lastIndex).toBe(9);
    expect(c.appliedData("c")).toHaveLength(8);
    c.node("a").propose(text("after"));
    c.settle();
    c.tickAll(1);
    expect(c.appliedData("c").at(-1)).toBe("after");
  });

  it("stale or duplicated answers never move the leader's view of a follower backwards", () => {
    const s = soloLeader();
    s.node.proposeBatch([text("x"), text("y"), text("z")]);
    s.flush();
    expect(s.node.status().progress.b).toMatchObject({ state: "replicate", match: 1, next: 5 });
    s.step(appendResponse("b", "a", 1, 4));
    expect(s.node.status()).toMatchObject({ commit: 4 });
    expect(s.node.status().progress.b).toMatchObject({ state: "replicate", match: 4, next: 5 });
    // A late acknowledgement and a late rejection of entries already acknowledged.
    const h = s.step(appendResponse("b", "a", 1, 2), appendResponse("b", "a", 1, 3, true, 1, 1));
    expect(s.node.status().progress.b).toMatchObject({ state: "replicate", match: 4, next: 5 });
    expect(ofType(h.messages, "append")).toEqual([]);
    expect(s.node.status().commit).toBe(4);
  });

  /**
   * A leader whose pipeline to b broke: b acknowledged 3, then refused the append after 4 while it
   * held 3, and the leader probes at 3. Returns the first append to b and the probe.
   */
  function probingAfterRefusal(): { s: Solo; first: AppendMessage; probe: AppendMessage } {
    const s = soloLeader();
    s.node.proposeBatch([text("w"), text("x"), text("y"), text("z")]);
    const [first] = appendsTo(s.flush().messages, "b");
    s.step(appendResponse("b", "a", 1, 3));
    const refused = s.step(appendResponse("b", "a", 1, 4, true, 3, 1, first!.epoch));
    const [probe] = appendsTo(refused.messages, "b", false);
    expect(s.node.status().progress.b).toMatchObject({ state: "probe", match: 3, next: 4 });
    expect(probe).toMatchObject({ index: 3 });
    return { s, first: first!, probe: probe! };
  }

  it("a refusal overtaken by later answers does not take the follower for one that lost its data", () => {
    const { s, first, probe } = probingAfterRefusal();
    expect(probe.epoch).toBeGreaterThan(first.epoch);
    // Refusals sent while b held only 2, overtaken by its acknowledgement of 3: of the append after
    // 4, and of the one after 3, the index the leader now probes at.
    const late = s.step(appendResponse("b", "a", 1, 4, true, 2, 1, first.epoch));
    expect(s.node.status().progress.b).toMatchObject({ state: "probe", match: 3, next: 4 });
    expect(appendsTo(late.messages, "b", false)).toEqual([]);
    s.step(appendResponse("b", "a", 1, 3, true, 2, 1, first.epoch));
    expect(s.node.status().progress.b).toMatchObject({ state: "probe", match: 3, next: 4 });
  });

  it("a follower refusing an append of the current epoch below its match is restarted from what it holds", () => {
    const { s, probe } = probingAfterRefusal();
    // b's data directory was restored from a copy that holds only the first entry.
    const h = s.step(appendResponse("b", "a", 1, 3, true, 1, 1, probe.epoch));
    expect(s.node.status().progress.b).toMatchObject({ state: "probe", match: 0, next: 2 });
    expect(appendsTo(h.messages, "b", false)).toMatchObject([{ index: 1, logTerm: 1 }]);
    // An acknowledgement of an append sent before it lost its data, late on the wire, names entries
    // it no longer holds: they must not count toward a commit.
    s.step(appendResponse("b", "a", 1, 3, false, 0, 0, probe.epoch));
    expect(s.node.status().progress.b).toMatchObject({ state: "probe", match: 0, next: 2 });
    // It takes the rest from there, and counts toward commits again as it acknowledges.
    s.step(appendResponse("b", "a", 1, 5, false, 0, 0, probe.epoch + 1));
    expect(s.node.status().progress.b).toMatchObject({ state: "replicate", match: 5 });
  });

  it("a probing leader ignores a rejection of anything but its last probe", () => {
    // Leader of term 2 over a term-1 log of two entries; c has never answered.
    const s = soloLeader({ storage: storageWithLog(VOTERS, [1, 1], { term: 1, commit: 2 }), applied: 2 });
    expect(s.node.status()).toMatchObject({ term: 2, lastIndex: 3 });
    expect(s.node.status().progress.c).toMatchObject({ state: "probe", next: 3 });
    const stale = s.step(appendResponse("c", "a", 2, 7, true, 1, 1));
    expect(ofType(stale.messages, "append")).toEqual([]);
    expect(s.node.status().progress.c).toMatchObject({ state: "probe", next: 3 });
    const fresh = s.step(appendResponse("c", "a", 2, 2, true, 1, 1));
    expect(ofType(fresh.messages, "append")).toMatchObject([{ to: "c", index: 1, logTerm: 1 }]);
    expect(s.node.status().progress.c).toMatchObject({ state: "probe", next: 2 });
  });

  it("fast backtracking: a long divergent tail is repaired in a few round trips", () => {
    const ids = ["a", "b", "c", "d", "e"];
    const checker = new InvariantChecker();
    const c = new InMemoryRaftCluster(ids, {}, 1, { onReady: checker.hook });
    c.elect("a");
    // a, cut off, keeps accepting proposals it can never commit: 100 divergent entries.
    c.isolate("a");
    for (let i = 0; i < 100; i++) c.node("a").propose(text(`lost${i}`));
    c.settle();
    const rest = ["b", "c", "d", "e"];
    c.tickUntil(() => rest.some((id) => c.node(id).status().role === "leader"), 300, rest);
    const l1 = rest.find((id) => c.node(id).status().role === "leader")!;
    for (let i = 0; i < 150; i++) c.node(l1).propose(text(`kept${i}`));
    c.settle();
    // l1 crashes; the three others elect a leader with the long log.
    c.isolate(l1);
    const three = rest.filter((id) => id !== l1);
    c.tickUntil(() => three.some((id) => c.node(id).status().role === "leader"), 300, three);
    const l2 = three.find((id) => c.node(id).status().role === "leader")!;
    expect(c.node("a").status().lastIndex).toBe(101);
    expect(c.node(l2).status().lastIndex).toBeGreaterThan(150);

    c.heal();
    c.isolate(l1);
    const before = c.delivered.length;
    const live = ids.filter((id) => id !== l1);
    c.tickUntil(() => c.node("a").status().commit === c.node(l2).status().commit, 50, live);
    const rejections = c.delivered
      .slice(before)
      .filter((m) => m.type === "append-response" && m.from === "a" && m.reject);
    expect(rejections.length).toBeGreaterThanOrEqual(1);
    expect(rejections.length).toBeLessThanOrEqual(3);
    expect(c.appliedData("a").filter((d) => d.startsWith("lost"))).toEqual([]);
    expect(c.appliedData("a").filter((d) => d.startsWith("kept"))).toHaveLength(150);
    checkLogMatching(c);
  });

  it("fast backtracking across several divergent terms", () => {
    // Follower: many short terms the leader never had; leader: one long term.
    const followerTerms = [1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6];
    const leaderTerms = [1, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7];
    const s = new Solo({ storage: storageWithLog(VOTERS, followerTerms, { term: 6, commit: 1 }) });
    const leaderLog = entriesWithTerms(leaderTerms);
    // The leader probes after its last entry; count the round trips a hint-following leader needs.
    let prev = leaderTerms.length;
    let trips = 0;
    for (;;) {
      trips++;
      const logTerm = prev === 0 ? 0 : leaderTerms[prev - 1]!;
      const h = s.step(append("b", "a", 8, prev, logTerm, leaderLog.slice(prev), 1));
      const r = ofType(h.messages, "append-response")[0]!;
      if (!r.reject) break;
      // Leader side of the hint: the last index of its own log with term <= the follower's hint term.
      let i = Math.min(r.rejectHint, leaderTerms.length);
      while (i > 0 && leaderTerms[i - 1]! > r.logTerm) i--;
      prev = i;
      expect(trips).toBeLessThan(5);
    }
    expect(trips).toBeLessThanOrEqual(2);
    expect(s.terms()).toEqual(leaderTerms);
  });
});

describe("a follower that lost its data", () => {
  it("is brought back from scratch instead of being probed above what it holds", () => {
    const c = new InMemoryRaftCluster(["a", "b", "c"]);
    c.elect("a");
    for (let i = 0; i < 5; i++) c.node("a").propose(text(`v${i}`));
    c.settle();
    c.tickAll(2);
    expect(c.node("a").status().progress.c!.match).toBe(6);
    c.wipe("c");
    for (let i = 5; i < 8; i++) c.node("a").propose(text(`v${i}`));
    c.settle();
    c.tickAll(3);
    expect(c.node("c").status().commit).toBe(c.node("a").status().commit);
    expect(c.appliedData("c")).toEqual(["v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"]);
  });

  it("is brought back by a snapshot when the leader has compacted what it lost", () => {
    const c = new InMemoryRaftCluster(["a", "b", "c"]);
    c.elect("a");
    for (let i = 0; i < 5; i++) c.node("a").propose(text(`v${i}`));
    c.settle();
    c.tickAll(2);
    expect(c.node("a").status().progress.c!.match).toBe(6);
    const storage = c.member("a").storage;
    storage.createSnapshot(6, { voters: ["a", "b", "c"] }, Uint8Array.of(1, 2, 3));
    storage.compact(6);
    c.wipe("c");
    for (let i = 5; i < 8; i++) c.node("a").propose(text(`v${i}`));
    c.settle();
    c.tickAll(3);
    // The snapshot's answers belong to the epoch begun after the loss was found, and count.
    expect(c.node("a").status().progress.c).toMatchObject({ state: "replicate", match: 9 });
    expect(c.member("c").storage.firstIndex()).toBe(7);
    expect(c.appliedData("c")).toEqual(["v5", "v6", "v7"]);
  });
});
