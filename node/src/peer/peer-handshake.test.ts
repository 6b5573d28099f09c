import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { encodeFrame, FrameDecoder } from "./frame-codec.js";
import { decodeRefusal, encodeHello, FrameType, NONCE_BYTES, type Refusal } from "./peer-frames.js";
import { describeLimitDifferences } from "./peer-handshake.js";
import { newEphemeralKey } from "./session-keys.js";
import { PeerFixture, waitFor } from "./test-fixtures/peer-fixture.js";

describe("describeLimitDifferences", () => {
  const own = new Map([
    ["maxLeaseBatch", 256],
    ["maxMutationBytes", 8388608],
  ]);

  it("is null when the limits are identical, whatever their order", () => {
    const same = new Map([
      ["maxMutationBytes", 8388608],
      ["maxLeaseBatch", 256],
    ]);
    expect(describeLimitDifferences("voter1", own, "voter2", same)).toBeNull();
  });

  it("names every differing or missing limit with both values", () => {
    const theirs = new Map([
      ["maxLeaseBatch", 256],
      ["maxMutationBytes", 1024],
      ["maxOutboxMessages", 64],
    ]);
    expect(describeLimitDifferences("voter1", own, "voter2", theirs)).toBe(
      "canonical limits differ between voter1 and voter2: maxMutationBytes is 8388608 on voter1 but 1024 on " +
        "voter2; maxOutboxMessages is not set on voter1 but 64 on voter2",
    );
  });
});

describe("acceptHandshake", () => {
  let fixture: PeerFixture;

  afterEach(async () => {
    await fixture?.closeAll();
  });

  /** Sends a Hello as a stranger would to voter1, and resolves with the refusal it gets. */
  async function helloTo(dialerId: string, acceptorId: string): Promise<Refusal> {
    const socket = connect(fixture.address("voter1").port, "127.0.0.1");
    socket.on("error", () => {});
    const hello = encodeHello({
      dialerId,
      acceptorId,
      nonce: new Uint8Array(NONCE_BYTES),
      ephemeralKey: newEphemeralKey().publicKey,
    });
    socket.write(encodeFrame(FrameType.Hello, hello));
    const decoder = new FrameDecoder();
    return new Promise<Refusal>((resolve, reject) => {
      socket.on("data", (chunk) =>
        decoder.push(chunk, (type, body) => {
          if (type === FrameType.Refuse) resolve(decodeRefusal(body));
          else reject(new Error(`frame type ${type} instead of a refusal`));
          socket.destroy();
        }),
      );
      socket.on("close", () => reject(new Error("closed without a refusal")));
    });
  }

  it("refuses a Hello whose ids are not member IDs, and neither echoes nor logs them whole", async () => {
    fixture = await PeerFixture.create(["voter1", "voter2"]);
    const voter1 = await fixture.start("voter1");
    const flood = "x".repeat(60_000);
    const unknown = await helloTo(flood, "voter1");
    expect(unknown.reason).toBe("UnknownPeer");
    const wrong = await helloTo("voter2", `voter1${flood}`);
    expect(wrong.reason).toBe("WrongPeer");
    const control = await helloTo('voter2\n{"level":60}', "voter1");
    expect(control.reason).toBe("UnknownPeer");
    await waitFor(() => voter1.stats().authFailures === 3);
    for (const refusal of [unknown, wrong, control]) expect(refusal.message.length).toBeLessThan(200);
    const lines = fixture.log("voter1").map((line) => JSON.stringify(line));
    expect(lines.filter((line) => /handshake refused/.test(line))).toHaveLength(3);
    for (const line of lines) {
      expect(line.length).toBeLessThan(1_000);
      expect(line).not.toContain("x".repeat(100));
    }
  });
});
