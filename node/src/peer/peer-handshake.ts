import { createHash, createHmac, type KeyObject, randomBytes, timingSafeEqual } from "node:crypto";
import { BinaryWriter } from "./binary-writer.js";
import type { ClusterId } from "./cluster-id.js";
import type { MemberIncarnations } from "./member-incarnations.js";
import { isMemberId, memberName } from "./member-name.js";
import type { Frame, PeerConnection } from "./peer-connection.js";
import { PeerHandshakeError, type PeerHandshakeFailure, PeerProtocolError } from "./peer-errors.js";
import {
  type Credentials,
  decodeChallenge,
  decodeCredentials,
  decodeHello,
  decodeRefusal,
  encodeAnnouncement,
  encodeChallenge,
  encodeCredentials,
  encodeHello,
  encodeRefusal,
  FrameType,
  NONCE_BYTES,
} from "./peer-frames.js";
import { quoted } from "./quoted.js";
import { deriveSessionKeys, type EphemeralKey, newEphemeralKey } from "./session-keys.js";

/*
 * Mutual challenge-response over the cluster secret, which never crosses the wire:
 *
 *   dialer   -> Hello     { dialerId, acceptorId, dialerNonce, dialer's ephemeral key }
 *   acceptor -> Challenge { acceptorId, acceptorNonce, acceptor's ephemeral key }
 *   dialer   -> Proof     { HMAC(secret, "dialer" | H(Hello, Challenge) | its announcement),
 *                          announcement: clusterId, httpUrl, canonical limits }
 *   acceptor -> Accept    { HMAC(secret, "acceptor" | H(Hello, Challenge) | both announcements),
 *                          announcement }
 *
 * Either side may answer Refuse { reason, message } instead and close. Fresh nonces from both sides
 * make every proof single-use; the direction label stops a proof from being reflected back as the
 * other side's; each proof covers every byte sent before it, so nothing in the handshake can be
 * altered on the path. The dialer proves first because it only ever talks to configured addresses,
 * whereas anyone can connect to the acceptor: an unauthenticated stranger gets no MAC to attack
 * offline. Every frame after Accept is sealed with keys from the ephemeral keys and the secret
 * (session-keys.ts): encrypted, and refused if forged, altered, replayed or reordered.
 */

const DIALER_LABEL = "keyload-peer-v4 dialer";
const ACCEPTOR_LABEL = "keyload-peer-v4 acceptor";
/** A refusal's reason is a PeerHandshakeFailure; its message a few lines (every differing limit). */
const MAX_REMOTE_REASON_CHARS = 64;
const MAX_REMOTE_MESSAGE_CHARS = 8_192;
/**
 * A refusal the acceptor reads comes before anyone has proved anything, from whoever connected; a
 * dialer's own refusals then are a line (its limits are compared after the acceptor's proof, sealed).
 */
const MAX_STRANGER_MESSAGE_CHARS = 512;
/** A reason that names a failure, as a voter sends it: shown as is; anything else is quoted. */
const FAILURE_NAME = /^[A-Za-z]+$/;

export interface HandshakeIdentity {
  readonly nodeId: string;
  readonly secret: KeyObject;
  /** Every voter id the cluster is configured with; this node's own id is refused as a peer. */
  readonly voterIds: ReadonlySet<string>;
  readonly httpUrl: string;
  readonly limits: ReadonlyMap<string, number>;
  readonly clusterId: ClusterId;
  /** This node's incarnation, announced, and the ones it has seen of its peers. */
  readonly incarnations: MemberIncarnations;
  /** This node's wall clock, in ms since the epoch, announced to the peer. */
  readonly wallMs: () => number;
}

export interface HandshakeResult {
  readonly peerId: string;
  /** The Raft member ID the peer announced (its name, or a new member's `name~token`). */
  readonly memberId: string;
  /** The public HTTP URL the peer announced, for leader hints. */
  readonly httpUrl: string;
  /** The peer's wall clock as it sent its announcement. */
  readonly wallMs: number;
}

/** Authenticates the connection this node dialed to `expectedPeerId`; throws PeerHandshakeError. */
export async function dialHandshake(
  connection: PeerConnection,
  self: HandshakeIdentity,
  expectedPeerId: string,
): Promise<HandshakeResult> {
  const ephemeral = newEphemeralKey();
  const hello = encodeHello({
    dialerId: self.nodeId,
    acceptorId: expectedPeerId,
    nonce: randomBytes(NONCE_BYTES),
    ephemeralKey: ephemeral.publicKey,
  });
  connection.send(FrameType.Hello, hello);
  const challengeBody = await nextFrame(
    connection,
    FrameType.Challenge,
    expectedPeerId,
    MAX_REMOTE_MESSAGE_CHARS,
  );
  const challenge = decodeChallenge(challengeBody);
  if (!isMemberId(challenge.acceptorId)) {
    refuse(
      connection,
      "WrongPeer",
      null,
      `dialed ${expectedPeerId} at ${connection.remoteAddress} but reached ${quoted(challenge.acceptorId)}, not a member ID`,
    );
  }
  if (challenge.acceptorId !== expectedPeerId) {
    refuse(
      connection,
      "WrongPeer",
      challenge.acceptorId,
      `dialed ${expectedPeerId} at ${connection.remoteAddress} but reached ${challenge.acceptorId}`,
    );
  }
  const opening = digestOf(hello, challengeBody);
  const announcement = encodeAnnouncement(announce(self));
  const proof = proofOf(self.secret, DIALER_LABEL, opening, announcement);
  connection.send(FrameType.Proof, encodeCredentials(proof, announcement));
  const accept = decodeCredentials(
    await nextFrame(connection, FrameType.Accept, expectedPeerId, MAX_REMOTE_MESSAGE_CHARS),
  );
  if (
    !proofMatches(
      accept.proof,
      proofOf(self.secret, ACCEPTOR_LABEL, opening, announcement, accept.announcement),
    )
  ) {
    refuse(connection, "BadProof", expectedPeerId, `${expectedPeerId} failed to prove the cluster secret`);
  }
  seal(
    connection,
    "dialer",
    ephemeral,
    challenge.ephemeralKey,
    self.secret,
    opening,
    announcement,
    accept.announcement,
  );
  checkLimits(connection, self, expectedPeerId, accept);
  checkCluster(connection, self, expectedPeerId, accept);
  checkIncarnation(connection, self, expectedPeerId, accept);
  return {
    peerId: expectedPeerId,
    memberId: accept.memberId,
    httpUrl: accept.httpUrl,
    wallMs: accept.wallMs,
  };
}

/**
 * Authenticates a connection another node dialed to this one; throws PeerHandshakeError. `proved` is
 * called once the dialer has proved the cluster secret: a failure after it is a configured peer's, one
 * before it anyone's.
 */
export async function acceptHandshake(
  connection: PeerConnection,
  self: HandshakeIdentity,
  proved: () => void = () => {},
): Promise<HandshakeResult> {
  let helloBody: Uint8Array;
  let hello: ReturnType<typeof decodeHello>;
  try {
    helloBody = await nextFrame(connection, FrameType.Hello, null, MAX_STRANGER_MESSAGE_CHARS);
    hello = decodeHello(helloBody);
  } catch (error) {
    if (error instanceof PeerHandshakeError && error.reason === "VersionMismatch") {
      refuse(connection, error.reason, null, error.message);
    }
    throw error;
  }
  const dialerId = hello.dialerId;
  // Anyone may connect and send up to a handshake frame's size of id: what is not a member ID is
  // named in the refusal and the log line by a short prefix only, and charged to no peer.
  if (!isMemberId(dialerId)) {
    refuse(connection, "UnknownPeer", null, `the dialer's id ${quoted(dialerId)} is not a member ID`);
  }
  if (!isMemberId(hello.acceptorId)) {
    refuse(
      connection,
      "WrongPeer",
      dialerId,
      `${dialerId} dialed ${quoted(hello.acceptorId)}, not a member ID, at ${self.nodeId}'s address`,
    );
  }
  if (!self.voterIds.has(dialerId) || dialerId === self.nodeId) {
    refuse(connection, "UnknownPeer", dialerId, `${dialerId} is not a voter of this cluster`);
  }
  if (hello.acceptorId !== self.nodeId) {
    refuse(
      connection,
      "WrongPeer",
      dialerId,
      `${dialerId} dialed ${hello.acceptorId} at ${self.nodeId}'s address: check the voter list`,
    );
  }
  const ephemeral = newEphemeralKey();
  const challenge = encodeChallenge({
    acceptorId: self.nodeId,
    nonce: randomBytes(NONCE_BYTES),
    ephemeralKey: ephemeral.publicKey,
  });
  connection.send(FrameType.Challenge, challenge);
  const proof = decodeCredentials(
    await nextFrame(connection, FrameType.Proof, dialerId, MAX_STRANGER_MESSAGE_CHARS),
  );
  const opening = digestOf(helloBody, challenge);
  if (!proofMatches(proof.proof, proofOf(self.secret, DIALER_LABEL, opening, proof.announcement))) {
    refuse(connection, "BadProof", dialerId, `${dialerId} failed to prove the cluster secret`);
  }
  proved();
  checkLimits(connection, self, dialerId, proof);
  checkCluster(connection, self, dialerId, proof);
  checkIncarnation(connection, self, dialerId, proof);
  const announcement = encodeAnnouncement(announce(self));
  const own = proofOf(self.secret, ACCEPTOR_LABEL, opening, proof.announcement, announcement);
  connection.send(FrameType.Accept, encodeCredentials(own, announcement));
  seal(
    connection,
    "acceptor",
    ephemeral,
    hello.ephemeralKey,
    self.secret,
    opening,
    proof.announcement,
    announcement,
  );
  return { peerId: dialerId, memberId: proof.memberId, httpUrl: proof.httpUrl, wallMs: proof.wallMs };
}

/**
 * Names every canonical limit that differs, with both values, or null when they are identical. A limit
 * present on one side only differs too: the two voters run different versions of the limit table.
 */
export function describeLimitDifferences(
  selfId: string,
  own: ReadonlyMap<string, number>,
  peerId: string,
  theirs: ReadonlyMap<string, number>,
): string | null {
  const names = [...new Set([...own.keys(), ...theirs.keys()])].sort();
  const differences: string[] = [];
  for (const name of names) {
    const mine = own.get(name);
    const other = theirs.get(name);
    if (!Object.is(mine, other)) {
      differences.push(`${name} is ${mine ?? "not set"} on ${selfId} but ${other ?? "not set"} on ${peerId}`);
    }
  }
  if (differences.length === 0) return null;
  return `canonical limits differ between ${selfId} and ${peerId}: ${differences.join("; ")}`;
}

/** The digest of Hello and Challenge, as sent: what both proofs and the session keys start from. */
function digestOf(hello: Uint8Array, challenge: Uint8Array): Buffer {
  // Length-prefixed, so no two different pairs of frames hash the same bytes.
  const w = new BinaryWriter(hello.length + challenge.length + 16);
  w.bytes(hello);
  w.bytes(challenge);
  return createHash("sha256").update(w.finish()).digest();
}

function proofOf(
  secret: KeyObject,
  label: string,
  opening: Uint8Array,
  ...announcements: Uint8Array[]
): Buffer {
  const w = new BinaryWriter(512);
  w.string(label);
  w.bytes(opening);
  for (const announcement of announcements) w.bytes(announcement);
  return createHmac("sha256", secret).update(w.finish()).digest();
}

function proofMatches(proof: Uint8Array, expected: Buffer): boolean {
  return proof.length === expected.length && timingSafeEqual(proof, expected);
}

function announce(self: HandshakeIdentity): Omit<Credentials, "proof"> {
  return {
    clusterId: self.clusterId.current() ?? "",
    memberId: self.incarnations.own.memberId,
    incarnation: self.incarnations.own.incarnation,
    httpUrl: self.httpUrl,
    limits: self.limits,
    wallMs: Math.floor(self.wallMs()),
  };
}

/** Switches the connection to sealed frames with keys bound to the whole handshake. */
function seal(
  connection: PeerConnection,
  side: "dialer" | "acceptor",
  own: EphemeralKey,
  theirKey: Uint8Array,
  secret: KeyObject,
  opening: Uint8Array,
  dialerAnnouncement: Uint8Array,
  acceptorAnnouncement: Uint8Array,
): void {
  const w = new BinaryWriter(512);
  w.bytes(opening);
  w.bytes(dialerAnnouncement);
  w.bytes(acceptorAnnouncement);
  const keys = deriveSessionKeys(own, theirKey, secret, createHash("sha256").update(w.finish()).digest());
  connection.seal(
    side === "dialer"
      ? { send: keys.dialerToAcceptor, receive: keys.acceptorToDialer }
      : { send: keys.acceptorToDialer, receive: keys.dialerToAcceptor },
  );
}

/**
 * Refuses a peer of another cluster. Called once the peer has proved the secret, so a node that does
 * not know its cluster yet may take the peer's: that is how a node that joins learns it.
 */
function checkCluster(
  connection: PeerConnection,
  self: HandshakeIdentity,
  peerId: string,
  peer: Credentials,
) {
  if (peer.clusterId === "") return;
  const own = self.clusterId.current();
  if (own === null) self.clusterId.adopt(peer.clusterId);
  else if (own !== peer.clusterId) {
    refuse(
      connection,
      "ClusterMismatch",
      peerId,
      `${peerId} belongs to cluster ${peer.clusterId} but ${self.nodeId} to cluster ${own}`,
    );
  }
}

/**
 * Refuses a peer that is a new incarnation of a member this node has seen: it lost its storage and was
 * made again under that member ID (MemberIncarnations). Called once the peer has proved the secret and
 * its cluster; the first incarnation seen of a member is recorded.
 */
function checkIncarnation(
  connection: PeerConnection,
  self: HandshakeIdentity,
  peerId: string,
  peer: Credentials,
) {
  const { memberId, incarnation } = peer;
  if (memberName(memberId) !== peerId) {
    refuse(connection, "WrongPeer", peerId, `${peerId} announced member ${memberId}, not one of its own`);
  }
  const seen = self.incarnations.seen(memberId);
  if (seen === undefined) self.incarnations.record(memberId, incarnation);
  else if (seen !== incarnation) {
    refuse(
      connection,
      "IncarnationMismatch",
      peerId,
      `member ${memberId} is incarnation ${incarnation}, but ${self.nodeId} knew it as ${seen}: it lost ` +
        "its storage and bootstrapped again, and must not vote with what it no longer holds. Stop it, " +
        "empty its data dir, start it without KeyLoad:Cluster:BootstrapId and add it as a new member",
    );
  }
}

function checkLimits(connection: PeerConnection, self: HandshakeIdentity, peerId: string, peer: Credentials) {
  const difference = describeLimitDifferences(self.nodeId, self.limits, peerId, peer.limits);
  if (difference) refuse(connection, "LimitsMismatch", peerId, difference);
}

/**
 * The next frame, which must be of `type`; a Refuse frame becomes a `Refused` handshake error, its
 * message cut to `maxMessageChars`.
 */
async function nextFrame(
  connection: PeerConnection,
  type: number,
  peerId: string | null,
  maxMessageChars: number,
): Promise<Uint8Array> {
  let frame: Frame;
  try {
    frame = await connection.receive();
  } catch (error) {
    if (error instanceof PeerHandshakeError || error instanceof PeerProtocolError) throw error;
    throw new PeerHandshakeError(
      "Disconnected",
      peerId,
      `the connection ended during the handshake: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (frame.type === FrameType.Refuse) {
    throw refusalError(frame.body, peerId, peerId ?? connection.remoteAddress, maxMessageChars);
  }
  if (frame.type !== type) throw new PeerProtocolError(`expected frame type ${type}, got ${frame.type}`);
  return frame.body;
}

/**
 * The `Refused` handshake error for a Refuse frame's `body` from `by`. What the other side says goes
 * into a log line, and before its proof it may be anyone: quoted, so its control characters reach no
 * log line or terminal, and cut to `maxMessageChars`.
 */
export function refusalError(
  body: Uint8Array,
  peerId: string | null,
  by: string,
  maxMessageChars: number = MAX_REMOTE_MESSAGE_CHARS,
): PeerHandshakeError {
  const refusal = decodeRefusal(body);
  const reason =
    FAILURE_NAME.test(refusal.reason) && refusal.reason.length <= MAX_REMOTE_REASON_CHARS
      ? refusal.reason
      : quoted(refusal.reason, MAX_REMOTE_REASON_CHARS);
  const message = quoted(refusal.message, maxMessageChars);
  return new PeerHandshakeError(
    "Refused",
    peerId,
    `${by} refused the connection (${reason}): ${message}`,
    reason,
  );
}

function refuse(
  connection: PeerConnection,
  reason: PeerHandshakeFailure,
  peerId: string | null,
  message: string,
): never {
  const error = new PeerHandshakeError(reason, peerId, message);
  connection.sendAndClose(FrameType.Refuse, encodeRefusal({ reason, message }), error);
  throw error;
}
