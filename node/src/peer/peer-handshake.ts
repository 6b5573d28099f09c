import { createHmac, type KeyObject, randomBytes, timingSafeEqual } from "node:crypto";
import { BinaryWriter } from "./binary-writer.js";
import type { ClusterId } from "./cluster-id.js";
import type { Frame, PeerConnection } from "./peer-connection.js";
import { PeerHandshakeError, type PeerHandshakeFailure, PeerProtocolError } from "./peer-errors.js";
import {
  type Credentials,
  decodeChallenge,
  decodeCredentials,
  decodeHello,
  decodeRefusal,
  encodeChallenge,
  encodeCredentials,
  encodeHello,
  encodeRefusal,
  FrameType,
  NONCE_BYTES,
} from "./peer-frames.js";

/*
 * Mutual challenge-response over the cluster secret, which never crosses the wire:
 *
 *   dialer   -> Hello     { dialerId, acceptorId, dialerNonce }
 *   acceptor -> Challenge { acceptorId, acceptorNonce }
 *   dialer   -> Proof     { HMAC(secret, "dialer"   | nonces | ids), clusterId, httpUrl, canonical limits }
 *   acceptor -> Accept    { HMAC(secret, "acceptor" | nonces | ids), clusterId, httpUrl, canonical limits }
 *
 * Either side may answer Refuse { reason, message } instead and close. Fresh nonces from both sides
 * make every proof single-use; the direction label stops a proof from being reflected back as the
 * other side's. The dialer proves first because it only ever talks to configured addresses, whereas
 * anyone can connect to the acceptor: an unauthenticated stranger gets no MAC to attack offline.
 * This authenticates the handshake only; the stream after it is neither encrypted nor MACed, so the
 * peer network must be trusted against active attackers (or tunnelled).
 */

const DIALER_LABEL = "keyload-peer-v1 dialer";
const ACCEPTOR_LABEL = "keyload-peer-v1 acceptor";

export interface HandshakeIdentity {
  readonly nodeId: string;
  readonly secret: KeyObject;
  /** Every voter id the cluster is configured with; this node's own id is refused as a peer. */
  readonly voterIds: ReadonlySet<string>;
  readonly httpUrl: string;
  readonly limits: ReadonlyMap<string, number>;
  readonly clusterId: ClusterId;
}

export interface HandshakeResult {
  readonly peerId: string;
  /** The public HTTP URL the peer announced, for leader hints. */
  readonly httpUrl: string;
}

/** Authenticates the connection this node dialed to `expectedPeerId`; throws PeerHandshakeError. */
export async function dialHandshake(
  connection: PeerConnection,
  self: HandshakeIdentity,
  expectedPeerId: string,
): Promise<HandshakeResult> {
  const dialerNonce = randomBytes(NONCE_BYTES);
  connection.send(
    FrameType.Hello,
    encodeHello({ dialerId: self.nodeId, acceptorId: expectedPeerId, nonce: dialerNonce }),
  );
  const challenge = decodeChallenge(await nextFrame(connection, FrameType.Challenge, expectedPeerId));
  if (challenge.acceptorId !== expectedPeerId) {
    refuse(
      connection,
      "WrongPeer",
      challenge.acceptorId,
      `dialed ${expectedPeerId} at ${connection.remoteAddress} but reached ${challenge.acceptorId}`,
    );
  }
  const transcript = {
    dialerNonce,
    acceptorNonce: challenge.nonce,
    dialerId: self.nodeId,
    acceptorId: expectedPeerId,
  };
  connection.send(FrameType.Proof, encodeCredentials(credentials(self, DIALER_LABEL, transcript)));
  const accept = decodeCredentials(await nextFrame(connection, FrameType.Accept, expectedPeerId));
  if (!proofMatches(accept.proof, self.secret, ACCEPTOR_LABEL, transcript)) {
    refuse(connection, "BadProof", expectedPeerId, `${expectedPeerId} failed to prove the cluster secret`);
  }
  checkLimits(connection, self, expectedPeerId, accept);
  checkCluster(connection, self, expectedPeerId, accept);
  return { peerId: expectedPeerId, httpUrl: accept.httpUrl };
}

/** Authenticates a connection another node dialed to this one; throws PeerHandshakeError. */
export async function acceptHandshake(
  connection: PeerConnection,
  self: HandshakeIdentity,
): Promise<HandshakeResult> {
  let hello: ReturnType<typeof decodeHello>;
  try {
    hello = decodeHello(await nextFrame(connection, FrameType.Hello, null));
  } catch (error) {
    if (error instanceof PeerHandshakeError && error.reason === "VersionMismatch") {
      refuse(connection, error.reason, null, error.message);
    }
    throw error;
  }
  const dialerId = hello.dialerId;
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
  const acceptorNonce = randomBytes(NONCE_BYTES);
  connection.send(FrameType.Challenge, encodeChallenge({ acceptorId: self.nodeId, nonce: acceptorNonce }));
  const proof = decodeCredentials(await nextFrame(connection, FrameType.Proof, dialerId));
  const transcript = { dialerNonce: hello.nonce, acceptorNonce, dialerId, acceptorId: self.nodeId };
  if (!proofMatches(proof.proof, self.secret, DIALER_LABEL, transcript)) {
    refuse(connection, "BadProof", dialerId, `${dialerId} failed to prove the cluster secret`);
  }
  checkLimits(connection, self, dialerId, proof);
  checkCluster(connection, self, dialerId, proof);
  connection.send(FrameType.Accept, encodeCredentials(credentials(self, ACCEPTOR_LABEL, transcript)));
  return { peerId: dialerId, httpUrl: proof.httpUrl };
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

interface Transcript {
  readonly dialerNonce: Uint8Array;
  readonly acceptorNonce: Uint8Array;
  readonly dialerId: string;
  readonly acceptorId: string;
}

function proofOf(secret: KeyObject, label: string, t: Transcript): Buffer {
  // Length-prefixed fields, so no two different transcripts serialise to the same bytes.
  const w = new BinaryWriter(160);
  w.string(label);
  w.bytes(t.dialerNonce);
  w.bytes(t.acceptorNonce);
  w.string(t.dialerId);
  w.string(t.acceptorId);
  return createHmac("sha256", secret).update(w.finish()).digest();
}

function proofMatches(proof: Uint8Array, secret: KeyObject, label: string, t: Transcript): boolean {
  const expected = proofOf(secret, label, t);
  return proof.length === expected.length && timingSafeEqual(proof, expected);
}

function credentials(self: HandshakeIdentity, label: string, t: Transcript): Credentials {
  return {
    proof: proofOf(self.secret, label, t),
    clusterId: self.clusterId.current() ?? "",
    httpUrl: self.httpUrl,
    limits: self.limits,
  };
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

function checkLimits(connection: PeerConnection, self: HandshakeIdentity, peerId: string, peer: Credentials) {
  const difference = describeLimitDifferences(self.nodeId, self.limits, peerId, peer.limits);
  if (difference) refuse(connection, "LimitsMismatch", peerId, difference);
}

/** The next frame, which must be of `type`; a Refuse frame becomes a `Refused` handshake error. */
async function nextFrame(
  connection: PeerConnection,
  type: number,
  peerId: string | null,
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
    const refusal = decodeRefusal(frame.body);
    throw new PeerHandshakeError(
      "Refused",
      peerId,
      `${peerId ?? connection.remoteAddress} refused the connection (${refusal.reason}): ${refusal.message}`,
      refusal.reason,
    );
  }
  if (frame.type !== type) throw new PeerProtocolError(`expected frame type ${type}, got ${frame.type}`);
  return frame.body;
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
