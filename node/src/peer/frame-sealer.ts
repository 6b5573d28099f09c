import { createCipheriv } from "node:crypto";
import { encodeFrameHeader } from "./frame-codec.js";
import { SEAL_ALGORITHM, SEAL_TAG_BYTES, sealNonce } from "./frame-seal.js";

/**
 * Seals what one side sends on an authenticated connection, a record of frames at a time (see
 * frame-seal.ts): AES-256-GCM under the direction's session key, the nonce a count of records sent,
 * the record's header as associated data. The body on the wire is the ciphertext followed by the tag,
 * and the header's length counts both.
 */
export class FrameSealer {
  private sent = 0n;

  constructor(private readonly key: Uint8Array) {}

  /** The record's wire bytes in parts to write one after the other: header, ciphertext, tag. */
  seal(type: number, body: readonly Uint8Array[], bodyLength: number): Uint8Array[] {
    const header = encodeFrameHeader(type, bodyLength + SEAL_TAG_BYTES);
    const cipher = createCipheriv(SEAL_ALGORITHM, this.key, sealNonce(this.sent++), {
      authTagLength: SEAL_TAG_BYTES,
    });
    cipher.setAAD(header);
    const out: Uint8Array[] = [header];
    for (const part of body) if (part.length > 0) out.push(cipher.update(part));
    const last = cipher.final();
    if (last.length > 0) out.push(last);
    out.push(cipher.getAuthTag());
    return out;
  }
}
