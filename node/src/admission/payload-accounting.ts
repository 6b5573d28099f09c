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

/** The two sizes of a payload the accounting counts. */
export interface PayloadSize {
  readonly utf16Length: number;
  readonly utf8Length: number;
}

/** The sizes of a payload given as text. */
export function payloadSize(text: string): PayloadSize {
  return { utf16Length: text.length, utf8Length: utf8ByteLength(text) };
}

/**
 * A command's retained bytes: its UTF-16 form, twice its UTF-8 size (serialization and escaping in the
 * Raft envelope) and the envelope overhead.
 */
export function retainedBytes(payload: PayloadSize): number {
  return 2 * payload.utf16Length + 2 * payload.utf8Length + ENVELOPE_OVERHEAD_BYTES;
}

/** An HTTP request's modeled bytes: working space, four times the admitted body and the overhead. */
export function modeledBytes(workingSpaceBytes: number, admittedBodyBytes: number): number {
  return workingSpaceBytes + 4 * admittedBodyBytes + ENVELOPE_OVERHEAD_BYTES;
}
