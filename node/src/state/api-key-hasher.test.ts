import { describe, expect, it } from "vitest";
import { hashApiKey, isApiKeyHash } from "./api-key.js";
import { ApiKeyHasher } from "./api-key-hasher.js";

describe("ApiKeyHasher", () => {
  it("stores a key keyed from the cluster secret, never as its plain digest", () => {
    const hasher = new ApiKeyHasher("one cluster secret");
    const stored = hasher.hash("kl_a key");
    expect(isApiKeyHash(stored)).toBe(true);
    expect(stored).not.toBe(hashApiKey("kl_a key"));
    expect(new ApiKeyHasher("one cluster secret").hash("kl_a key")).toBe(stored);
    expect(new ApiKeyHasher("another cluster secret").hash("kl_a key")).not.toBe(stored);
    expect(hasher.hash("kl_another key")).not.toBe(stored);
  });

  it("keys a plain digest stored earlier to what the key hashes to now", () => {
    const hasher = new ApiKeyHasher("one cluster secret");
    expect(hasher.rekey(hashApiKey("kl_a key"))).toBe(hasher.hash("kl_a key"));
  });
});
