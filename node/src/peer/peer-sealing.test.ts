import { afterEach, describe, expect, it } from "vitest";
import type { Message } from "../raft/types.js";
import type { PeerTransport } from "./peer-transport.js";
import { appendWith, FORGED_REQUEST, PathBetween, type Tamper } from "./test-fixtures/path-between.js";
import { PeerFixture, waitFor } from "./test-fixtures/peer-fixture.js";

const MARKER = Buffer.from("a value only the voters may read");

describe("sealed peer frames", () => {
  let fixture: PeerFixture;
  let path: PathBetween | null = null;

  afterEach(async () => {
    await fixture?.closeAll();
    await path?.close();
    path = null;
  });

  /** voter1 reaches voter2 only through the path; voter2 reaches voter1 directly. */
  async function throughPath(
    tamper: Tamper,
    connected = true,
    setUp: (voter2: PeerTransport) => void = () => {},
  ): Promise<{ voter1: PeerTransport; voter2: PeerTransport }> {
    fixture = await PeerFixture.create(["voter1", "voter2"]);
    path = new PathBetween(tamper, fixture.address("voter2").port);
    const pathPort = await path.listen();
    const voters = fixture.voters.map((v) => (v.id === "voter2" ? { ...v, port: pathPort } : v));
    const voter2 = await fixture.start("voter2");
    setUp(voter2);
    const voter1 = await fixture.start("voter1", { voters });
    if (connected) await waitFor(() => voter1.peerInfo("voter2")?.connected === true);
    return { voter1, voter2 };
  }

  it("carries frames through an honest path, unreadable on it", async () => {
    const { voter1 } = await throughPath("none");
    voter1.send(appendWith(MARKER));
    await waitFor(() => fixture.inbox("voter2").length === 1);
    const delivered = fixture.inbox("voter2")[0]!;
    expect(delivered.type === "append" && Buffer.from(delivered.entries[0]!.data)).toEqual(MARKER);
    expect(Buffer.concat(path!.seen).includes(MARKER)).toBe(false);
  });

  it.each([
    ["an altered frame", "flip"],
    ["a frame the path made up", "inject"],
    ["a replayed frame", "replay"],
    ["a frame after a dropped one", "drop"],
  ] as const)("refuses %s and closes the connection", async (_name, tamper) => {
    const { voter1, voter2 } = await throughPath(tamper);
    voter1.send(appendWith(MARKER));
    // Frames sent in one turn share a record: the next one goes in a record of its own.
    if (tamper === "drop") setTimeout(() => voter1.send(appendWith(MARKER, 1002)), 20);
    await waitFor(() => voter2.stats().unauthenticFrames === 1);
    const delivered = fixture.inbox("voter2");
    // Only a frame that came through untouched, in order, may have been delivered.
    const expected = tamper === "replay" ? 1 : 0;
    expect(delivered).toHaveLength(expected);
    for (const message of delivered) {
      expect(message.type === "append" && Buffer.from(message.entries[0]!.data)).toEqual(MARKER);
    }
    const closed = fixture.log("voter2").find((line) => /peer connection closed/.test(line.msg));
    expect(closed?.err).toMatchObject({
      message: expect.stringMatching(/failed its authentication|unsealed frame of type 16/),
    });
  });

  it("never delivers or serves unsealed frames appended to the dialer's Proof, and counts them", async () => {
    const served: string[] = [];
    const { voter1, voter2 } = await throughPath("after-proof", false, (voter2) =>
      voter2.handle(FORGED_REQUEST.channel, async (from, body) => {
        served.push(`${from}: ${Buffer.from(body).toString()}`);
        return new Uint8Array();
      }),
    );
    // The path tampers with the first connection only: the next one must get through, untouched.
    await waitFor(() => voter1.peerInfo("voter2")?.connected === true && path!.connections >= 2);
    voter1.send(appendWith(MARKER));
    const honest = (m: Message) => m.type === "append" && Buffer.from(m.entries[0]!.data).equals(MARKER);
    await waitFor(() => fixture.inbox("voter2").some(honest));
    expect(fixture.inbox("voter2").filter((m) => !honest(m))).toEqual([]);
    expect(served).toEqual([]);
    // Refused before voter1 was authenticated: charged to no peer.
    expect(voter2.peerStats().get("")).toMatchObject({ unauthenticFrames: 1, protocolErrors: 1 });
    expect(voter2.peerStats().get("voter1")?.unauthenticFrames ?? 0).toBe(0);
    const refused = fixture.log("voter2").find((line) => /peer connection failed/.test(line.msg));
    expect(refused?.err).toMatchObject({ message: expect.stringMatching(/did not ask for/) });
  });

  it("refuses unsealed frames appended to the acceptor's Accept, then reconnects", async () => {
    const { voter1, voter2 } = await throughPath("after-accept", false);
    voter2.handle("echo", async (_from, body) => body);
    await waitFor(() => voter1.peerInfo("voter2")?.connected === true && path!.connections >= 2);
    expect(voter1.peerStats().get("voter2")).toMatchObject({ unauthenticFrames: 1, protocolErrors: 1 });
    const answer = await voter1.request("voter2", "echo", Buffer.from("hi"), { timeoutMs: 2_000 });
    expect(Buffer.from(answer).toString()).toBe("hi");
  });

  it("refuses a handshake whose announcement was altered on the path", async () => {
    const { voter1, voter2 } = await throughPath("announcement", false);
    await waitFor(() => voter2.stats().authFailures >= 1);
    const refused = fixture.log("voter2").find((line) => /handshake refused/.test(line.msg));
    expect(refused).toMatchObject({ peerId: "voter1", reason: "BadProof" });
    expect(voter1.peerInfo("voter2")?.connected).toBe(false);
  });
});
