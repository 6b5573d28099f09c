import type { Lane } from "@keyload/contract";
import { AdmissionRefusal } from "./admission-refusal.js";

/**
 * Counts the bytes of a request body while it is read and fails once they pass the cap, so a chunked
 * body (or one longer than it declared) cannot grow past what its reservation accounted for.
 */
export class BodyGuard {
  private bytes = 0;

  constructor(
    readonly pool: Lane,
    /** Usually the reservation's `admittedBodyBytes`. */
    readonly limitBytes: number,
  ) {}

  get bytesRead(): number {
    return this.bytes;
  }

  /** Counts one chunk; throws ResourceExhausted `BodyTooLarge` when the body passes the cap. */
  count(chunkBytes: number): void {
    this.bytes += chunkBytes;
    if (this.bytes > this.limitBytes) {
      const property = this.pool === "control" ? "MaxControlBodyBytes" : "MaxDataBodyBytes";
      throw new AdmissionRefusal(
        "BodyTooLarge",
        "http",
        this.pool,
        property,
        this.limitBytes,
        this.bytes,
        0,
      ).toError();
    }
  }

  /**
   * Passes the chunks of `source` through, failing before the chunk that passes the cap is handed on.
   * As a `stream.pipeline` stage: `(source) => guard.guard(source)`.
   */
  async *guard(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array, void, undefined> {
    for await (const chunk of source) {
      this.count(chunk.byteLength);
      yield chunk;
    }
  }
}
