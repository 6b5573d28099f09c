import { hash, randomBytes } from "node:crypto";

const KEY_HASH = /^[0-9a-f]{64}$/;

/**
 * The plain digest of an API key: the lowercase hex SHA-256 of its UTF-8 text. The state stores it only
 * keyed (ApiKeyHasher); commands proposed before keys were keyed carry it as it is.
 */
export function hashApiKey(apiKey: string): string {
  // The one-shot form: no Hash object per request.
  return hash("sha256", apiKey, "hex");
}

export function isApiKeyHash(value: string): boolean {
  return KEY_HASH.test(value);
}

/**
 * A fresh API key, for the voter that accepts `POST .../keys`: it proposes only the key's stored hash and
 * returns the key to the caller once. Never called while applying (that would break determinism).
 */
export function generateApiKey(): string {
  return `kl_${randomBytes(32).toString("base64url")}`;
}
