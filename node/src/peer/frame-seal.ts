/** What FrameSealer and FrameOpener agree on: the cipher, its tag and how a frame's nonce is formed. */

export const SEAL_ALGORITHM = "aes-256-gcm";
export const SEAL_TAG_BYTES = 16;
const NONCE_BYTES = 12;

/** The 96-bit GCM nonce of the frame numbered `count` in its direction: four zero bytes, then the count. */
export function sealNonce(count: bigint): Buffer {
  const nonce = Buffer.alloc(NONCE_BYTES);
  nonce.writeBigUInt64BE(count, NONCE_BYTES - 8);
  return nonce;
}
