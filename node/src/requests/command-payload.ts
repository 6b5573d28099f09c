const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * A command's payload: the request body's UTF-8 bytes exactly as received, with its length in UTF-16
 * code units, which the contract's accounting counts beside the UTF-8 bytes (section 5).
 *
 * A write is carried as these bytes from the edge into its Raft entry. Held as a string, a large body
 * would sit in V8's young generation for as long as the write is in flight, and every scavenge meanwhile
 * would copy it (docs/decisions/0028-payloads-as-bytes.md); the bytes live outside the heap and go into
 * the entry without being encoded again.
 */
export class CommandPayload {
  static readonly EMPTY = new CommandPayload(new Uint8Array(0), 0);

  private constructor(
    readonly bytes: Uint8Array,
    readonly utf16Length: number,
  ) {}

  /**
   * A body the edge has read and decoded: `utf16Length` is the decoded text's length, so the bytes are
   * valid UTF-8 and nothing is counted twice.
   */
  static received(bytes: Uint8Array, utf16Length: number): CommandPayload {
    return bytes.byteLength === 0 ? CommandPayload.EMPTY : new CommandPayload(bytes, utf16Length);
  }

  /** A payload given as text (a forwarded command, a test); a lone surrogate encodes as U+FFFD. */
  static fromText(text: string): CommandPayload {
    return text.length === 0 ? CommandPayload.EMPTY : new CommandPayload(encoder.encode(text), text.length);
  }

  get utf8Length(): number {
    return this.bytes.byteLength;
  }

  text(): string {
    return decoder.decode(this.bytes);
  }
}
