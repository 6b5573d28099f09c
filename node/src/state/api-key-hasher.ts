import { createHmac, createSecretKey, type KeyObject } from "node:crypto";
import { hashApiKey } from "./api-key.js";

/** Separates this use of the cluster secret from every other (the peer handshake's, say). */
const PURPOSE = "keyload api-key hashes";

/**
 * What the state stores and looks up for an API key: HMAC-SHA256, keyed from the cluster secret, of the
 * key's SHA-256. A copy of the state (a backup, a snapshot file, a stolen disk) then does not let anyone
 * test guessed keys offline without the secret as well. The keyed hash is taken over the plain digest,
 * not the key, so that digests stored before keys were hashed this way can be converted in place
 * (schema 4's migration; commands proposed before it, applied after): the plain keys were never kept.
 *
 * Every voter holds the same cluster secret (the peer handshake proves it), so they all store the same
 * hashes and the state stays deterministic. Changing the cluster secret invalidates every API key.
 */
export class ApiKeyHasher {
  private readonly key: KeyObject;

  constructor(clusterSecret: string) {
    this.key = createSecretKey(createHmac("sha256", clusterSecret).update(PURPOSE).digest());
  }

  /** The stored form of `apiKey`, lowercase hex. */
  hash(apiKey: string): string {
    return this.rekey(hashApiKey(apiKey));
  }

  /** The stored form of a key known only by its plain SHA-256 digest (lowercase hex). */
  rekey(digest: string): string {
    return createHmac("sha256", this.key).update(Buffer.from(digest, "hex")).digest("hex");
  }
}
