import { createDecipheriv } from "node:crypto";
import { encodeFrameHeader } from "./frame-codec.js";
import { SEAL_ALGORITHM, SEAL_TAG_BYTES, sealNonce } from "./frame-seal.js";
import { PeerProtocolError } from "./peer-errors.js";

/**
 * Opens the records the other side sealed (see FrameSealer), in the order they arrive. A record that
 * was forged, altered, replayed, reordered or cut fails its tag, and the connection is closed: nothing
 * of it reaches Raft or a request handler.
 */
export class FrameOpener {
  private received = 0n;

  constructor(private readonly key: Uint8Array) {}

  /** The plaintext of a record whose wire body is `sealed`; throws PeerProtocolError. */
  open(type: number, sealed: Uint8Array): Uint8Array {
    if (sealed.length < SEAL_TAG_BYTES) throw new PeerProtocolError("a sealed frame is shorter than its tag");
    const decipher = createDecipheriv(SEAL_ALGORITHM, this.key, sealNonce(this.received++), {
      authTagLength: SEAL_TAG_BYTES,
    });
    decipher.setAAD(encodeFrameHeader(type, sealed.length));
    const cut = sealed.length - SEAL_TAG_BYTES;
    decipher.setAuthTag(sealed.subarray(cut));
    const body = decipher.update(sealed.subarray(0, cut));
    try {
      const last = decipher.final();
      return last.length === 0 ? body : Buffer.concat([body, last]);
    } catch {
      throw new PeerProtocolError(
        "a sealed record failed its authentication: forged, altered or out of order",
      );
    }
  }
}
