import { describe, expect, it } from "vitest";
import { PeerHandshakeError, PeerProtocolError } from "./peer-errors.js";
import {
  decodeChallenge,
  decodeCredentials,
  decodeFailure,
  decodeHello,
  decodeRefusal,
  decodeRequest,
  decodeResponse,
  encodeAnnouncement,
  encodeChallenge,
  encodeCredentials,
  encodeFailure,
  encodeHello,
  encodeRefusal,
  encodeRequest,
  encodeResponse,
  NONCE_BYTES,
  PROOF_BYTES,
} from "./peer-frames.js";
import { EPHEMERAL_KEY_BYTES } from "./session-keys.js";

const nonce = new Uint8Array(NONCE_BYTES).fill(7);
const ephemeralKey = new Uint8Array(EPHEMERAL_KEY_BYTES).fill(9);

describe("peer frames", () => {
  it("round-trip every handshake and request body", () => {
    const hello = { dialerId: "voter1", acceptorId: "voter2", nonce, ephemeralKey };
    expect(decodeHello(encodeHello(hello))).toEqual(hello);
    const challenge = { acceptorId: "voter2", nonce, ephemeralKey };
    expect(decodeChallenge(encodeChallenge(challenge))).toEqual(challenge);
    const proof = new Uint8Array(PROOF_BYTES).fill(1);
    const announcement = {
      clusterId: "7f3c0a4e-cluster",
      memberId: "voter2~0a1b2c3d",
      incarnation: "5b0e7d21a9c3f406",
      httpUrl: "http://127.0.0.1:7101",
      wallMs: 1_796_000_000_123,
      limits: new Map([
        ["maxMutationBytes", 8388608],
        ["maxLeaseBatch", 256],
      ]),
    };
    const announced = encodeAnnouncement(announcement);
    expect(decodeCredentials(encodeCredentials(proof, announced))).toEqual({
      proof,
      ...announcement,
      announcement: announced,
    });
    const refusal = { reason: "BadProof", message: "voter9 failed to prove the cluster secret" };
    expect(decodeRefusal(encodeRefusal(refusal))).toEqual(refusal);
    const request = { id: 300, channel: "forward", body: Uint8Array.from([1, 2]) };
    expect(decodeRequest(encodeRequest(request))).toEqual(request);
    const response = { id: 2 ** 40, body: new Uint8Array(0) };
    expect(decodeResponse(encodeResponse(response))).toEqual(response);
    const failure = { id: 1, code: "ResourceExhausted", message: "é" };
    expect(decodeFailure(encodeFailure(failure))).toEqual(failure);
  });

  it("refuses a stream that is not a KeyLoad peer, and names an unsupported version", () => {
    const http = Buffer.from("GET / HTTP/1.1\r\n\r\n");
    expect(() => decodeHello(http)).toThrow(PeerProtocolError);
    const hello = Uint8Array.from(encodeHello({ dialerId: "a", acceptorId: "b", nonce, ephemeralKey }));
    hello[4] = 1;
    expect(() => decodeHello(hello)).toThrow(PeerHandshakeError);
    expect(() => decodeHello(hello)).toThrow(/version 1 is not supported/);
  });

  it("refuses a short nonce, key or proof and a limit announced twice", () => {
    const hello = encodeHello({ dialerId: "a", acceptorId: "b", nonce, ephemeralKey });
    expect(() => decodeHello(hello.subarray(0, hello.length - 1))).toThrow(PeerProtocolError);
    const proof = new Uint8Array(PROOF_BYTES);
    const credentials = encodeCredentials(
      proof,
      encodeAnnouncement({
        clusterId: "",
        memberId: "a",
        incarnation: "i",
        httpUrl: "u",
        wallMs: 1,
        limits: new Map([["x", 1]]),
      }),
    );
    expect(() => decodeCredentials(credentials.subarray(0, 10))).toThrow(PeerProtocolError);
    // proof, cluster ID "", member "a", incarnation "i", URL "u", wall clock, two limits: the same one twice.
    const twice = Buffer.concat([
      proof,
      Uint8Array.from([0, 1, 97, 1, 105, 1, 117]),
      f64(1),
      Uint8Array.from([2]),
      ...Array(2).fill(limitEntry("x", 1)),
    ]);
    expect(() => decodeCredentials(twice)).toThrow(/announced twice/);
    const announced = (bytes: number[]) =>
      Buffer.concat([proof, Uint8Array.from(bytes), f64(1), Uint8Array.from([0])]);
    // Member "a" with incarnation "", then with incarnation ESC, then member " " (not a member ID).
    expect(() => decodeCredentials(announced([0, 1, 97, 0, 1, 117]))).toThrow(
      /an incarnation is 1-64 characters of/,
    );
    expect(() => decodeCredentials(announced([0, 1, 97, 1, 27, 1, 117]))).toThrow(
      /an incarnation is 1-64 characters of/,
    );
    expect(() => decodeCredentials(announced([0, 1, 32, 1, 105, 1, 117]))).toThrow(/member ID is not one/);
  });

  it.each([-1, 1.5, Number.NaN, 2 ** 60])("refuses an announced wall clock of %s", (wallMs) => {
    const credentials = Buffer.concat([
      new Uint8Array(PROOF_BYTES),
      Uint8Array.from([0, 1, 97, 1, 105, 1, 117]),
      f64(wallMs),
      Uint8Array.from([0]),
    ]);
    expect(() => decodeCredentials(credentials)).toThrow(/wall clock/);
  });
});

function f64(value: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeDoubleBE(value);
  return bytes;
}

function limitEntry(name: string, value: number): Buffer {
  const bytes = Buffer.alloc(1 + name.length + 8);
  bytes[0] = name.length;
  bytes.write(name, 1, "ascii");
  bytes.writeDoubleBE(value, 1 + name.length);
  return bytes;
}
