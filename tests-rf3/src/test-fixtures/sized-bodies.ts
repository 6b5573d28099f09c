/**
 * A request body of exactly `size` UTF-8 bytes: `shape` wraps an ASCII filler in the route's JSON, and
 * the filler is as long as it must be. Throws when `shape` alone is already longer.
 */
export function bodyOfSize(size: number, shape: (filler: string) => string): string {
  const frame = Buffer.byteLength(shape(""));
  if (frame > size) throw new RangeError(`a body of ${size} bytes cannot hold its ${frame}-byte frame`);
  return shape("x".repeat(size - frame));
}

/**
 * A command's retained bytes by the contract's formula (section 5): twice the payload's UTF-16 code
 * units, twice its UTF-8 bytes, and 4096 bytes of envelope overhead. Computed here from the contract,
 * not taken from the voter, so the tests check the voter against it.
 */
export function retainedBytesOf(payload: string): number {
  return 2 * payload.length + 2 * Buffer.byteLength(payload, "utf8") + 4096;
}

/**
 * A payload whose retained bytes are exactly `retained`: `shape` wraps an ASCII filler (4 retained
 * bytes a character) in the route's JSON. Throws when no filler length gets there exactly.
 */
export function payloadRetaining(retained: number, shape: (filler: string) => string): string {
  const rest = retained - retainedBytesOf(shape(""));
  if (rest < 0 || rest % 4 !== 0) {
    throw new RangeError(`no ASCII filler makes this payload retain exactly ${retained} bytes`);
  }
  return shape("x".repeat(rest / 4));
}
