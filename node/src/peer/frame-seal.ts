/**
 * What FrameSealer and FrameOpener agree on: the cipher, its tag, how a record's nonce is formed, and
 * the frame type of a sealed record. After the handshake every frame travels inside a sealed record:
 * the frames one connection sends in one turn of the event loop, sealed together, so that the fixed
 * cost of a cipher is paid once per write rather than once per frame.
 */

export const SEAL_ALGORITHM = "aes-256-gcm";
export const SEAL_TAG_BYTES = 16;
const NONCE_BYTES = 12;

/** The 96-bit GCM nonce of the frame numbered `count` in its direction: four zero bytes, then the count. */
export function sealNonce(count: bigint): Buffer {
  const nonce = Buffer.alloc(NONCE_BYTES);
  nonce.writeBigUInt64BE(count, NONCE_BYTES - 8);
  return nonce;
}

/** The outer frame type of a sealed record; no frame inside a record has it. */
export const SEALED_RECORD_TYPE = 0x20;
/** A record is sealed and written once the frames queued for it reach this many bytes. */
export const SEALED_RECORD_BYTES = 256 * 1024;
