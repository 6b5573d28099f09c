/** The accounting formulas of contract section 5. */
import { Buffer } from "node:buffer";

/** Envelope overhead added to every command and every HTTP request. */
export const ENVELOPE_OVERHEAD_BYTES = 4096;

/**
 * UTF-8 bytes of `text` as an encoder would write it: 4 for a surrogate pair, 3 for a lone surrogate
 * (encoded as U+FFFD). Buffer.byteLength counts in native code over the string itself, without
 * producing the encoded copy; it is several times faster than a JavaScript loop over charCodeAt.
 */
export function utf8ByteLength(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/**
 * A command's retained bytes: its UTF-16 form, twice its UTF-8 size (serialization and escaping in the
 * Raft envelope) and the envelope overhead. `utf8Bytes` lets a caller that already counted pass it in.
 */
export function retainedBytes(payload: string, utf8Bytes: number = utf8ByteLength(payload)): number {
  return 2 * payload.length + 2 * utf8Bytes + ENVELOPE_OVERHEAD_BYTES;
}

/** An HTTP request's modeled bytes: working space, four times the admitted body and the overhead. */
export function modeledBytes(workingSpaceBytes: number, admittedBodyBytes: number): number {
  return workingSpaceBytes + 4 * admittedBodyBytes + ENVELOPE_OVERHEAD_BYTES;
}
