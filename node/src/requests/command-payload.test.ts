import { describe, expect, it } from "vitest";
import { CommandPayload } from "./command-payload.js";

describe("CommandPayload", () => {
  it("keeps a received body's bytes and the length its decoder gave", () => {
    const text = '{"value":"é€😀"}';
    const bytes = Buffer.from(text);
    const payload = CommandPayload.received(bytes, text.length);
    expect(payload.bytes).toBe(bytes);
    expect([payload.utf16Length, payload.utf8Length]).toEqual([text.length, bytes.byteLength]);
    expect(payload.text()).toBe(text);
  });

  it("measures text as an encoder writes it, a lone surrogate as U+FFFD", () => {
    expect(CommandPayload.fromText("é😀")).toMatchObject({ utf16Length: 3, utf8Length: 6 });
    const lone = CommandPayload.fromText("x\ud800");
    expect([lone.utf16Length, lone.utf8Length]).toEqual([2, 4]);
    expect(lone.text()).toBe("x\ufffd");
  });

  it("has one empty payload, whichever way it was made", () => {
    expect(CommandPayload.fromText("")).toBe(CommandPayload.EMPTY);
    expect(CommandPayload.received(new Uint8Array(0), 0)).toBe(CommandPayload.EMPTY);
    expect([CommandPayload.EMPTY.utf8Length, CommandPayload.EMPTY.text()]).toEqual([0, ""]);
  });
});
