/** A body being read: undici's, or any stream of bytes that can be dropped. */
export interface ReadableBody extends AsyncIterable<Uint8Array> {
  destroy(): unknown;
}

/**
 * Reads `body` to its end as UTF-8 text (a BOM dropped, as undici's `text()` does), counting its bytes as
 * they come: once they pass `maxBytes` the body is destroyed, the rest never read, and the answer is
 * undefined. A voter or a proxy gone wrong could otherwise fill the client's memory.
 */
export async function readBoundedText(body: ReadableBody, maxBytes: number): Promise<string | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return new TextDecoder().decode(Buffer.concat(chunks, size));
}
