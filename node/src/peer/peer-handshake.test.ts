import { connect, createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { encodeFrame, FrameDecoder } from "./frame-codec.js";
import {
  decodeRefusal,
  encodeHello,
  encodeRefusal,
  FrameType,
  NONCE_BYTES,
  type Refusal,
} from "./peer-frames.js";
import { describeLimitDifferences } from "./peer-handshake.js";
import { newEphemeralKey } from "./session-keys.js";
import { type LogLine, PeerFixture, waitFor } from "./test-fixtures/peer-fixture.js";

/** Any C0 or C1 control character, or DEL: what must never reach a log line raw. */
const CONTROL = /\p{Cc}/u;

/** A refusal as a hostile peer might word it: terminal escapes (C0 and C1), then 8 KiB of padding. */
const HOSTILE_REFUSAL: Refusal = {
  reason: `Evil\u001b[2J\u009b31m${"r".repeat(200)}`,
  message: `\u001b]0;owned\u0007\u009d0;title\u009c${"\u001b[5m".repeat(1_000)}${"m".repeat(8_000)}`,
};

/** Every string in a captured log line, however deep, but a stack trace's (its lines are ours). */
function stringsOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, field]) => (key === "stack" ? [] : stringsOf(field)));
}

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
    // Every failure logged here: what this checks is each line, not how often lines come.
    const voter1 = await fixture.start("voter1", { strangerLogIntervalMs: 0 });
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

  it("quotes and cuts short what a stranger's refusal says, control characters and all", async () => {
    fixture = await PeerFixture.create(["voter1"]);
    const voter1 = await fixture.start("voter1");
    const socket = connect(fixture.address("voter1").port, "127.0.0.1");
    socket.on("error", () => {});
    socket.write(encodeFrame(FrameType.Refuse, encodeRefusal(HOSTILE_REFUSAL)));
    await waitFor(() => voter1.stats().authFailures === 1);
    socket.destroy();
    const line = fixture.log("voter1").find((l) => /refused the connection/.test(l.msg));
    expect(line).toMatchObject({ reason: "Refused" });
    for (const text of stringsOf(line)) expect(text).not.toMatch(CONTROL);
    expect(line!.msg).toContain("\\u001b]0;owned\\u0007\\u009d0;title\\u009c");
    // Before anyone proved anything, a refusal is a line at most.
    expect(JSON.stringify(line).length).toBeLessThan(2_000);
  });
});

describe("dialHandshake", () => {
  let fixture: PeerFixture;
  let impostor: Server | null = null;

  afterEach(async () => {
    await fixture?.closeAll();
    const server = impostor;
    impostor = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("quotes and bounds the refusal of whoever answers at a peer's address", async () => {
    fixture = await PeerFixture.create(["voter1", "voter2"]);
    const server = createServer((socket) => {
      socket.on("error", () => {});
      // Refuses every Hello, as whoever holds voter2's address may.
      socket.once("data", () => socket.end(encodeFrame(FrameType.Refuse, encodeRefusal(HOSTILE_REFUSAL))));
    });
    impostor = server;
    await new Promise<void>((resolve) => server.listen(fixture.address("voter2").port, "127.0.0.1", resolve));
    await fixture.start("voter1");
    const refused = (l: LogLine) => /voter2 refused the connection/.test(l.msg);
    await waitFor(() => fixture.log("voter1").some(refused));
    const line = fixture.log("voter1").find(refused)!;
    for (const text of stringsOf(line)) expect(text).not.toMatch(CONTROL);
    expect(line.msg).toContain("\\u001b]0;owned\\u0007\\u009d0;title\\u009c");
    // A peer's refusal may name every differing limit: longer, but still bounded, escapes and all.
    expect(line.msg.length).toBeLessThan(9_000);
  });
});
