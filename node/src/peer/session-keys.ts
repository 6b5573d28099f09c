import {
  createHmac,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  type KeyObject,
} from "node:crypto";
import { PeerProtocolError } from "./peer-errors.js";

/*
 * The keys that seal one connection's frames after its handshake. Each side contributes an ephemeral
 * X25519 key in its first handshake frame; both proofs MAC the whole handshake transcript (those keys
 * included) under the cluster secret, so a stranger on the path can neither substitute a key nor read
 * the stream. The keys are derived from the Diffie-Hellman result and the cluster secret together:
 * knowing the secret later does not open recorded traffic (the ephemeral keys are gone), and a flaw in
 * either input alone does not give the keys away. One key per direction, so a nonce can never repeat
 * under one key even though both sides count frames from zero.
 */

export const EPHEMERAL_KEY_BYTES = 32;
export const SESSION_KEY_BYTES = 32;

/** The DER prefix of an X25519 SubjectPublicKeyInfo; the raw key follows it. */
const X25519_SPKI_PREFIX = Buffer.from("302a300506032b656e032100", "hex");

export interface EphemeralKey {
  readonly privateKey: KeyObject;
  /** The raw 32-byte public key, as sent in the handshake. */
  readonly publicKey: Uint8Array;
}

export interface SessionKeys {
  /** Seals the frames the dialer sends and the acceptor opens. */
  readonly dialerToAcceptor: Uint8Array;
  /** Seals the frames the acceptor sends and the dialer opens. */
  readonly acceptorToDialer: Uint8Array;
}

export function newEphemeralKey(): EphemeralKey {
  const { privateKey, publicKey } = generateKeyPairSync("x25519");
  const spki = publicKey.export({ format: "der", type: "spki" });
  return { privateKey, publicKey: spki.subarray(X25519_SPKI_PREFIX.length) };
}

/**
 * The connection's two keys from this side's ephemeral key, the other side's public key, the cluster
 * secret and a digest of the handshake transcript. Throws PeerProtocolError for a public key that
 * yields no shared secret (a low-order point), which only a broken or hostile peer sends.
 */
export function deriveSessionKeys(
  own: EphemeralKey,
  theirPublicKey: Uint8Array,
  secret: KeyObject,
  transcriptDigest: Uint8Array,
): SessionKeys {
  if (theirPublicKey.length !== EPHEMERAL_KEY_BYTES) {
    throw new PeerProtocolError(`an ephemeral key must be ${EPHEMERAL_KEY_BYTES} bytes`);
  }
  let shared: Buffer;
  try {
    const publicKey = createPublicKey({
      key: Buffer.concat([X25519_SPKI_PREFIX, theirPublicKey]),
      format: "der",
      type: "spki",
    });
    shared = diffieHellman({ privateKey: own.privateKey, publicKey });
  } catch (error) {
    throw new PeerProtocolError(`the peer's ephemeral key is unusable: ${(error as Error).message}`);
  }
  if (shared.every((byte) => byte === 0)) {
    throw new PeerProtocolError("the peer's ephemeral key is a low-order point");
  }
  // The salt binds the keys to the cluster secret and this very handshake.
  const salt = createHmac("sha256", secret).update("keyload-peer session").update(transcriptDigest).digest();
  const key = (info: string) => new Uint8Array(hkdfSync("sha256", shared, salt, info, SESSION_KEY_BYTES));
  return { dialerToAcceptor: key("dialer to acceptor"), acceptorToDialer: key("acceptor to dialer") };
}
