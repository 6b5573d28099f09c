import { BinaryReader } from "./binary-reader.js";
import { BinaryWriter } from "./binary-writer.js";
import { isMemberId } from "./member-name.js";
import { PeerHandshakeError, PeerProtocolError } from "./peer-errors.js";
import { EPHEMERAL_KEY_BYTES } from "./session-keys.js";

/**
 * The frame types of the peer protocol and the layout of every body but Raft messages (those are in
 * raft-message-codec.ts). The dialer sends Hello and Proof, the acceptor Challenge and Accept, either
 * may send Refuse; after the handshake the dialer sends Raft and Request frames and the acceptor
 * answers with Response and Failure frames on the same connection.
 */
export const FrameType = {
  Hello: 1,
  Challenge: 2,
  Proof: 3,
  Accept: 4,
  Refuse: 5,
  Raft: 16,
  Request: 17,
  Response: 18,
  Failure: 19,
} as const;

// 2: snapshot metadata names learners; credentials carry the cluster ID.
// 3: snapshot chunks carry the whole snapshot's checksum.
// 4: ephemeral keys in Hello and Challenge, proofs over the whole transcript, frames sealed after the
//    handshake, entries carry their checksum.
// 5: announcements carry the sender's wall clock.
// 6: snapshot chunks carry the replication epoch their answers echo; announcements carry the sender's
//    incarnation.
const PROTOCOL_VERSION = 7;
const INCARNATION = /^[A-Za-z0-9._-]{1,64}$/;
export const NONCE_BYTES = 32;
export const PROOF_BYTES = 32;
/** Tells a stray client (an HTTP request sent to the peer port, say) apart from a peer at once. */
const MAGIC = Buffer.from("KLPT", "ascii");

export interface Hello {
  readonly dialerId: string;
  /** The voter the dialer meant to reach. */
  readonly acceptorId: string;
  readonly nonce: Uint8Array;
  /** The dialer's ephemeral X25519 public key for this connection's session keys. */
  readonly ephemeralKey: Uint8Array;
}

export interface Challenge {
  readonly acceptorId: string;
  readonly nonce: Uint8Array;
  readonly ephemeralKey: Uint8Array;
}

/** Proof (dialer) and Accept (acceptor): the sender's proof and what it announces about itself. */
export interface Credentials {
  readonly proof: Uint8Array;
  /** The sender's cluster ID, or "" while it has not learnt one. */
  readonly clusterId: string;
  /** The sender's Raft member ID (its name, or `name~token` for a later member under it). */
  readonly memberId: string;
  /** The sender's incarnation: made with its storage (MemberIncarnations). */
  readonly incarnation: string;
  readonly httpUrl: string;
  readonly limits: ReadonlyMap<string, number>;
  /** The sender's wall clock as it sent them, in ms since the epoch (see PeerInfo.wallMs). */
  readonly wallMs: number;
}

export interface Refusal {
  readonly reason: string;
  readonly message: string;
}

export interface Request {
  readonly id: number;
  readonly channel: string;
  readonly body: Uint8Array;
}

export interface Response {
  readonly id: number;
  readonly body: Uint8Array;
}

export interface Failure {
  readonly id: number;
  readonly code: string;
  readonly message: string;
}

export function encodeHello(hello: Hello): Uint8Array {
  const w = new BinaryWriter(64 + NONCE_BYTES + EPHEMERAL_KEY_BYTES);
  w.raw(MAGIC);
  w.u8(PROTOCOL_VERSION);
  w.string(hello.dialerId);
  w.string(hello.acceptorId);
  w.raw(hello.nonce);
  w.raw(hello.ephemeralKey);
  return w.finish();
}

export function decodeHello(body: Uint8Array): Hello {
  const r = new BinaryReader(body);
  if (!MAGIC.equals(r.fixed(MAGIC.length))) throw new PeerProtocolError("not a KeyLoad peer connection");
  const version = r.u8();
  // Another version may lay out the rest differently: stop at the version, so it can be refused politely.
  if (version !== PROTOCOL_VERSION) {
    throw new PeerHandshakeError(
      "VersionMismatch",
      null,
      `peer protocol version ${version} is not supported (this node speaks version ${PROTOCOL_VERSION})`,
    );
  }
  const dialerId = r.string();
  const acceptorId = r.string();
  const nonce = r.fixed(NONCE_BYTES);
  const ephemeralKey = r.fixed(EPHEMERAL_KEY_BYTES);
  r.end();
  return { dialerId, acceptorId, nonce, ephemeralKey };
}

export function encodeChallenge(challenge: Challenge): Uint8Array {
  const w = new BinaryWriter(64 + NONCE_BYTES + EPHEMERAL_KEY_BYTES);
  w.string(challenge.acceptorId);
  w.raw(challenge.nonce);
  w.raw(challenge.ephemeralKey);
  return w.finish();
}

export function decodeChallenge(body: Uint8Array): Challenge {
  const r = new BinaryReader(body);
  const acceptorId = r.string();
  const nonce = r.fixed(NONCE_BYTES);
  const ephemeralKey = r.fixed(EPHEMERAL_KEY_BYTES);
  r.end();
  return { acceptorId, nonce, ephemeralKey };
}

/** What a Proof or Accept announces about its sender. */
export type Announcement = Omit<Credentials, "proof">;

/** The announcement's bytes, as sent after the proof; the proof covers exactly these bytes. */
export function encodeAnnouncement(announcement: Announcement): Uint8Array {
  const w = new BinaryWriter(256);
  w.string(announcement.clusterId);
  w.string(announcement.memberId);
  w.string(announcement.incarnation);
  w.string(announcement.httpUrl);
  w.f64(announcement.wallMs);
  w.uint(announcement.limits.size);
  for (const [name, value] of announcement.limits) {
    w.string(name);
    w.f64(value);
  }
  return w.finish();
}

/** A Proof or Accept body: the proof, then the announcement it covers. */
export function encodeCredentials(proof: Uint8Array, announcement: Uint8Array): Uint8Array {
  return Buffer.concat([proof, announcement]);
}

/** Decodes a Proof or Accept body; `announcement` holds the bytes the proof must cover. */
export function decodeCredentials(body: Uint8Array): Credentials & { readonly announcement: Uint8Array } {
  const r = new BinaryReader(body);
  const proof = r.fixed(PROOF_BYTES);
  const announcement = body.subarray(PROOF_BYTES);
  const clusterId = r.string();
  const memberId = r.string();
  if (!isMemberId(memberId)) throw new PeerProtocolError("the announced member ID is not one");
  const incarnation = r.string();
  // Named in refusals and log lines: plain characters only.
  if (!INCARNATION.test(incarnation)) {
    throw new PeerProtocolError("an incarnation is 1-64 characters of [A-Za-z0-9._-]");
  }
  const httpUrl = r.string();
  const wallMs = r.f64();
  if (!Number.isSafeInteger(wallMs) || wallMs < 0) {
    throw new PeerProtocolError("the announced wall clock is not a whole number of ms since the epoch");
  }
  const count = r.count(9);
  const limits = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const name = r.string();
    if (limits.has(name)) throw new PeerProtocolError(`limit ${name} announced twice`);
    limits.set(name, r.f64());
  }
  r.end();
  return { proof, clusterId, memberId, incarnation, httpUrl, wallMs, limits, announcement };
}

export function encodeRefusal(refusal: Refusal): Uint8Array {
  const w = new BinaryWriter(64 + refusal.message.length);
  w.string(refusal.reason);
  w.string(refusal.message);
  return w.finish();
}

export function decodeRefusal(body: Uint8Array): Refusal {
  const r = new BinaryReader(body);
  const reason = r.string();
  const message = r.string();
  r.end();
  return { reason, message };
}

export function encodeRequest(request: Request): Uint8Array {
  const w = new BinaryWriter(32 + request.channel.length + request.body.length);
  w.uint(request.id);
  w.string(request.channel);
  w.raw(request.body);
  return w.finish();
}

export function decodeRequest(body: Uint8Array): Request {
  const r = new BinaryReader(body);
  const id = r.uint();
  const channel = r.string();
  return { id, channel, body: r.rest() };
}

export function encodeResponse(response: Response): Uint8Array {
  const w = new BinaryWriter(16 + response.body.length);
  w.uint(response.id);
  w.raw(response.body);
  return w.finish();
}

export function decodeResponse(body: Uint8Array): Response {
  const r = new BinaryReader(body);
  const id = r.uint();
  return { id, body: r.rest() };
}

export function encodeFailure(failure: Failure): Uint8Array {
  const w = new BinaryWriter(32 + failure.code.length + failure.message.length);
  w.uint(failure.id);
  w.string(failure.code);
  w.string(failure.message);
  return w.finish();
}

export function decodeFailure(body: Uint8Array): Failure {
  const r = new BinaryReader(body);
  const id = r.uint();
  const code = r.string();
  const message = r.string();
  r.end();
  return { id, code, message };
}
