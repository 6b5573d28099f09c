import { FailedPreconditionError, InvalidArgumentError } from "@keyload/contract";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { PeerRemoteError } from "../peer/peer-errors.js";
import type { RequestOptions } from "../peer/peer-link.js";
import type { ConfChange } from "../raft/conf-change.js";
import { ClusterMembership, type MemberJoin } from "./cluster-membership.js";
import { decodeJoinAnswer, encodeJoinRequest, JOIN_CHANNEL, joinHandler } from "./member-join.js";
import { MemberJoiner } from "./member-joiner.js";
import type { Member, RaftDriver } from "./raft-driver.js";
import { failure } from "./test-fixtures/wait-for.js";

const silent = pino({ level: "silent" });

describe("the join handler", () => {
  const asked: string[] = [];
  const membership: Pick<ClusterMembership, "join"> = {
    join: async (memberId, holds): Promise<MemberJoin> => {
      asked.push(`${memberId} ${holds}`);
      return { role: holds === "learner" ? "removed" : "learner", changes: [] };
    },
  };
  beforeEach(() => {
    asked.length = 0;
  });

  it("answers the role the leader's step left the new member in", async () => {
    const handle = joinHandler(membership, silent);
    const answer = await handle("voter3", encodeJoinRequest("voter3~0a1b2c3d", "none"));
    expect(decodeJoinAnswer(answer)).toBe("learner");
    const removed = await handle("voter3", encodeJoinRequest("voter3~0a1b2c3d", "learner"));
    expect(decodeJoinAnswer(removed)).toBe("removed");
    expect(asked).toEqual(["voter3~0a1b2c3d none", "voter3~0a1b2c3d learner"]);
  });

  it("lets a peer join only under the name its handshake proved, and refuses what is not text", async () => {
    const handle = joinHandler(membership, silent);
    const other = await failure(handle("voter2", encodeJoinRequest("voter3~0a1b2c3d", "none")));
    expect(other).toBeInstanceOf(InvalidArgumentError);
    expect((other as InvalidArgumentError).reason).toBe("InvalidJoinRequest");
    for (const body of [
      Uint8Array.of(0xff, 0xfe),
      Buffer.from("voter3~0a1b2c3d"),
      Buffer.from("voter3~0a1b2c3d\nvoter"),
      Buffer.from("voter3~0a1b2c3d\nnone\nnone"),
    ]) {
      const refused = await failure(handle("voter3", body));
      expect(refused).toBeInstanceOf(InvalidArgumentError);
      expect((refused as InvalidArgumentError).reason).toBe("InvalidJoinRequest");
    }
    expect(asked).toEqual([]);
  });

  it("reads only a role from an answer", () => {
    expect(decodeJoinAnswer(Buffer.from("voter"))).toBe("voter");
    expect(decodeJoinAnswer(Buffer.from("removed"))).toBe("removed");
    expect(decodeJoinAnswer(Buffer.from("leader"))).toBeNull();
  });
});

/** A leader's configuration, changed as the driver would change it once each change applied. */
class FakeLeader {
  conf: Member[];
  readonly proposed: ConfChange[] = [];

  constructor(conf: Member[]) {
    this.conf = conf;
  }

  members(): Member[] {
    return this.conf;
  }

  status() {
    return { id: "voter1", leader: "voter1", role: "leader", lastIndex: 100 };
  }
  isLeader(): boolean {
    return true;
  }
  async readBarrier(): Promise<void> {}
  async proposeConfChange(change: ConfChange): Promise<void> {
    this.proposed.push(change);
    if (change.type === "remove") this.conf = this.conf.filter((m) => m.id !== change.node);
    else if (change.type === "add-learner")
      this.conf.push({
        id: change.node,
        name: change.node.split("~")[0]!,
        role: "learner",
        match: 0,
        active: true,
      });
    else this.conf = this.conf.map((m) => (m.id === change.node ? { ...m, role: "voter" } : m));
  }

  membership(reached: string | null): ClusterMembership {
    return new ClusterMembership(this as unknown as RaftDriver, {
      isKnownName: () => true,
      memberAt: () => reached,
      maxPromoteLagEntries: 10,
      deadlineMs: 1_000,
    });
  }
}

const NEW = "voter3~0a1b2c3d";
const voter = (id: string, active: boolean): Member => ({ id, name: id, role: "voter", match: 100, active });

describe("the leader's step of a join", () => {
  it("removes the silent member of the name, adds the new one as a learner, promotes it once caught up", async () => {
    const leader = new FakeLeader([voter("voter1", true), voter("voter2", true), voter("voter3", false)]);
    const membership = leader.membership(NEW);
    expect(await membership.join(NEW, "none")).toEqual({
      role: "learner",
      changes: ["removed voter3", `added ${NEW} as a learner`],
    });
    // Behind: refused, and nothing is proposed.
    const behind = await failure(membership.join(NEW, "learner"));
    expect((behind as FailedPreconditionError).reason).toBe("LearnerBehind");
    leader.conf = leader.conf.map((m) => (m.id === NEW ? { ...m, match: 95 } : m));
    expect(await membership.join(NEW, "learner")).toEqual({ role: "voter", changes: [`promoted ${NEW}`] });
    expect(await membership.join(NEW, "none")).toEqual({ role: "voter", changes: [] });
    expect(leader.proposed.map((c) => c.type)).toEqual(["remove", "add-learner", "promote"]);
  });

  it("replaces a member of the name that was itself a learner", async () => {
    const learner: Member = {
      id: "voter3~11111111",
      name: "voter3",
      role: "learner",
      match: 3,
      active: false,
    };
    const leader = new FakeLeader([voter("voter1", true), voter("voter2", true), learner]);
    expect((await leader.membership(NEW).join(NEW, "none")).changes).toEqual([
      "removed voter3~11111111",
      `added ${NEW} as a learner`,
    ]);
  });

  it("changes nothing that would leave fewer active voters than a quorum", async () => {
    const leader = new FakeLeader([voter("voter1", true), voter("voter2", false), voter("voter3", false)]);
    const refused = await failure(leader.membership(NEW).join(NEW, "none"));
    expect((refused as FailedPreconditionError).reason).toBe("NotEnoughActiveVoters");
    expect(leader.proposed).toEqual([]);
  });

  it("tells a removed learner so, and adds no one its own connection does not reach at the address", async () => {
    const leader = new FakeLeader([voter("voter1", true), voter("voter2", true)]);
    expect(await leader.membership(NEW).join(NEW, "learner")).toEqual({ role: "removed", changes: [] });
    for (const reached of [null, "voter3~ffffffff"]) {
      const refused = await failure(leader.membership(reached).join(NEW, "none"));
      expect((refused as FailedPreconditionError).reason).toBe("JoinerNotAtAddress");
    }
    expect(leader.proposed).toEqual([]);
  });
});

describe("the member joiner", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const ID = "voter3~0a1b2c3d";

  function joinerWith(
    state: {
      members: Member[];
      leader: string | null;
      answer: () => Promise<Uint8Array>;
    },
    logger = silent,
  ) {
    const requests: { peer: string; channel: string; body: string }[] = [];
    const joiner = new MemberJoiner({
      driver: {
        status: () => ({ id: ID, leader: state.leader }) as ReturnType<MemberJoinerDriver["status"]>,
        members: () => state.members,
      },
      transport: {
        request: (peer: string, channel: string, body: Uint8Array, _options: RequestOptions) => {
          requests.push({ peer, channel, body: Buffer.from(body).toString() });
          return state.answer();
        },
        peerInfo: (peer: string) => ({
          connected: peer !== "voter2",
          httpUrl: null,
          wallMs: null,
          memberId: peer,
        }),
      },
      peers: ["voter1", "voter2"],
      logger,
      intervalMs: 100,
      requestTimeoutMs: 1_000,
    });
    return { joiner, requests };
  }

  it("asks every connected peer while it holds no configuration, then the leader it follows as a learner", async () => {
    const state = {
      members: [] as Member[],
      leader: null as string | null,
      answer: async () => Buffer.from("learner"),
    };
    const { joiner, requests } = joinerWith(state);
    joiner.start();
    await vi.advanceTimersByTimeAsync(100);
    // voter2 is not connected: only voter1 is asked.
    expect(requests).toEqual([{ peer: "voter1", channel: JOIN_CHANNEL, body: `${ID}\nnone` }]);

    state.members = [
      { id: "voter1", name: "voter1", role: "voter" },
      { id: "voter2", name: "voter2", role: "voter" },
      { id: ID, name: "voter3", role: "learner" },
    ];
    state.leader = "voter2";
    await vi.advanceTimersByTimeAsync(100);
    expect(requests.at(-1)).toEqual({ peer: "voter2", channel: JOIN_CHANNEL, body: `${ID}\nlearner` });

    // A voter asks nothing more.
    state.members = state.members.map((m) => (m.id === ID ? { ...m, role: "voter" } : m));
    const asked = requests.length;
    await vi.advanceTimersByTimeAsync(500);
    expect(requests).toHaveLength(asked);
    joiner.stop();
  });

  it("asks nothing while the configuration it holds leaves it out, and once stopped", async () => {
    const state = {
      members: [
        { id: "voter1", name: "voter1", role: "voter" },
        { id: "voter2", name: "voter2", role: "voter" },
        { id: "voter3", name: "voter3", role: "voter" },
      ] as Member[],
      leader: "voter1" as string | null,
      answer: async () => Buffer.from("voter"),
    };
    const { joiner, requests } = joinerWith(state);
    joiner.start();
    await vi.advanceTimersByTimeAsync(500);
    expect(requests).toEqual([]);

    state.members = [];
    joiner.stop();
    await vi.advanceTimersByTimeAsync(500);
    expect(requests).toEqual([]);
  });

  it("stops asking for good once the leader says it was removed", async () => {
    const state = {
      members: [
        { id: "voter1", name: "voter1", role: "voter" },
        { id: "voter2", name: "voter2", role: "voter" },
        { id: ID, name: "voter3", role: "learner" },
      ] as Member[],
      leader: "voter1" as string | null,
      answer: async () => Buffer.from("removed"),
    };
    const { joiner, requests } = joinerWith(state);
    joiner.start();
    await vi.advanceTimersByTimeAsync(100);
    expect(requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(requests).toHaveLength(1);
  });

  it("logs a leader's refusal once in a row, whatever figures it carries", async () => {
    const messages = [
      "voter3~0a1b2c3d holds the log up to 3 of 90: promote it once it has caught up",
      "voter3~0a1b2c3d holds the log up to 40 of 95: promote it once it has caught up",
      "voter3's configured address is not reached yet, not as voter3~0a1b2c3d: it joins once it does",
      "voter3~0a1b2c3d holds the log up to 80 of 99: promote it once it has caught up",
    ];
    const state = {
      members: [] as Member[],
      leader: null as string | null,
      answer: () =>
        Promise.reject(new PeerRemoteError("voter1", "FailedPrecondition", messages.shift() ?? "")),
    };
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (text: string) => lines.push(JSON.parse(text).msg) });
    const { joiner } = joinerWith(state, logger);
    joiner.start();
    await vi.advanceTimersByTimeAsync(400);
    joiner.stop();
    expect(lines).toEqual([
      "join request refused; asking again",
      "join request refused; asking again",
      "join request refused; asking again",
    ]);
  });

  it("asks once at a time, and again after a refusal", async () => {
    let settle: (body: Uint8Array) => void = () => {};
    const answers: (() => Promise<Uint8Array>)[] = [
      () => Promise.reject(new PeerRemoteError("voter1", "FailedPrecondition", "learner behind")),
      () =>
        new Promise<Uint8Array>((resolve) => {
          settle = resolve;
        }),
    ];
    const state = {
      members: [] as Member[],
      leader: null as string | null,
      answer: () => (answers.shift() ?? (() => Promise.reject(new FailedPreconditionError("no more"))))(),
    };
    const { joiner, requests } = joinerWith(state);
    joiner.start();
    await vi.advanceTimersByTimeAsync(100);
    await vi.advanceTimersByTimeAsync(100);
    expect(requests).toHaveLength(2);
    // The second request is unanswered: no third is sent beside it.
    await vi.advanceTimersByTimeAsync(300);
    expect(requests).toHaveLength(2);
    settle(Buffer.from("learner"));
    await vi.advanceTimersByTimeAsync(100);
    expect(requests).toHaveLength(3);
    joiner.stop();
  });
});

type MemberJoinerDriver = ConstructorParameters<typeof MemberJoiner>[0]["driver"];
