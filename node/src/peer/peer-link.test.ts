import { afterEach, describe, expect, it } from "vitest";
import { PathBetween } from "./test-fixtures/path-between.js";
import { heartbeat, PeerFixture, waitFor } from "./test-fixtures/peer-fixture.js";

describe("PeerLink", () => {
  let fixture: PeerFixture;
  let path: PathBetween | null = null;

  afterEach(async () => {
    await fixture?.closeAll();
    await path?.close();
    path = null;
  });

  it("redials when the connection closes as the dial handshake completes", async () => {
    fixture = await PeerFixture.create(["voter1", "voter2"]);
    // The first connection is closed by voter1 right after it has read Accept, in the same chunk.
    path = new PathBetween("oversize-after-accept", fixture.address("voter2").port);
    const pathPort = await path.listen();
    const voters = fixture.voters.map((v) => (v.id === "voter2" ? { ...v, port: pathPort } : v));
    const voter2 = await fixture.start("voter2");
    voter2.handle("echo", async (_from, body) => body);
    const voter1 = await fixture.start("voter1", { voters });
    await waitFor(() => voter1.stats().protocolErrors === 1);
    // Not left holding the closed connection: it redials after its backoff and gets through.
    await waitFor(() => path!.connections >= 2 && voter1.peerInfo("voter2")?.connected === true);
    voter1.send(heartbeat("voter1", "voter2", 3));
    await waitFor(() => fixture.inbox("voter2").length === 1);
    expect(fixture.inbox("voter2")).toEqual([heartbeat("voter1", "voter2", 3)]);
    const answer = await voter1.request("voter2", "echo", Buffer.from("hi"), { timeoutMs: 2_000 });
    expect(Buffer.from(answer).toString()).toBe("hi");
    expect(voter1.stats().reconnects).toBeGreaterThanOrEqual(1);
  });
});
