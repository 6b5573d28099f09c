import { FailedPreconditionError, InvalidArgumentError } from "@keyload/contract";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { PeerRemoteError } from "../peer/peer-errors.js";
import type { RequestOptions } from "../peer/peer-link.js";
import type { ClusterMembership, MemberJoin } from "./cluster-membership.js";
import { decodeJoinAnswer, encodeJoinRequest, JOIN_CHANNEL, joinHandler } from "./member-join.js";
import { MemberJoiner } from "./member-joiner.js";
import type { Member } from "./raft-driver.js";
import { failure } from "./test-fixtures/wait-for.js";

const silent = pino({ level: "silent" });

describe("the join handler", () => {
  const asked: string[] = [];
  const membership: Pick<ClusterMembership, "join"> = {
    join: async (memberId): Promise<MemberJoin> => {
      asked.push(memberId);
      return { role: "learner", changes: [] };
    },
  };
  beforeEach(() => {
    asked.length = 0;
  });

  it("answers the role the leader's step left the new member in", async () => {
    const answer = await joinHandler(membership, silent)("voter3", encodeJoinRequest("voter3~0a1b2c3d"));
    expect(decodeJoinAnswer(answer)).toBe("learner");
    expect(asked).toEqual(["voter3~0a1b2c3d"]);
  });

  it("lets a peer join only under the name its handshake proved, and refuses what is not text", async () => {
    const handle = joinHandler(membership, silent);
    const other = await failure(handle("voter2", encodeJoinRequest("voter3~0a1b2c3d")));
    expect(other).toBeInstanceOf(InvalidArgumentError);
    expect((other as InvalidArgumentError).reason).toBe("InvalidJoinRequest");
    const garbage = await failure(handle("voter3", Uint8Array.of(0xff, 0xfe)));
    expect(garbage).toBeInstanceOf(InvalidArgumentError);
    expect(asked).toEqual([]);
  });

  it("reads only a role from an answer", () => {
    expect(decodeJoinAnswer(Buffer.from("voter"))).toBe("voter");
    expect(decodeJoinAnswer(Buffer.from("leader"))).toBeNull();
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

  function joinerWith(state: {
    members: Member[];
    leader: string | null;
    answer: () => Promise<Uint8Array>;
  }) {
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
        peerInfo: (peer: string) => ({ connected: peer !== "voter2", httpUrl: null, wallMs: null }),
      },
      peers: ["voter1", "voter2"],
      logger: silent,
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
    expect(requests).toEqual([{ peer: "voter1", channel: JOIN_CHANNEL, body: ID }]);

    state.members = [
      { id: "voter1", name: "voter1", role: "voter" },
      { id: "voter2", name: "voter2", role: "voter" },
      { id: ID, name: "voter3", role: "learner" },
    ];
    state.leader = "voter2";
    await vi.advanceTimersByTimeAsync(100);
    expect(requests.at(-1)).toEqual({ peer: "voter2", channel: JOIN_CHANNEL, body: ID });

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
