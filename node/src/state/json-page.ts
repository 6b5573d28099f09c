/**
 * The items of one read page as JSON texts, counted in UTF-8 bytes against the page's bound. The first
 * item always fits, so a document larger than the bound is answered alone rather than never.
 */
export class JsonPage {
  private readonly items: string[] = [];
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** Adds `item` unless it would take the page past its bound; false when the page is full. */
  add(item: string): boolean {
    const size = Buffer.byteLength(item, "utf8") + 1;
    if (this.items.length > 0 && this.bytes + size > this.maxBytes) return false;
    this.items.push(item);
    this.bytes += size;
    return true;
  }

  get count(): number {
    return this.items.length;
  }

  /** The items as one JSON array. */
  array(): string {
    return `[${this.items.join(",")}]`;
  }
}
