/**
 * The append messages in flight to one follower in the replicate state, bounded by count and bytes.
 * Each is remembered by its last index so an acknowledgement frees everything up to it.
 */
export class Inflights {
  private readonly indexes: number[] = [];
  private readonly sizes: number[] = [];
  private head = 0;
  private bytes = 0;

  constructor(
    private readonly maxCount: number,
    private readonly maxBytes: number,
  ) {}

  add(lastIndex: number, bytes: number): void {
    this.indexes.push(lastIndex);
    this.sizes.push(bytes);
    this.bytes += bytes;
  }

  /** Frees every message whose last index is at most `index`. */
  freeLE(index: number): void {
    while (this.head < this.indexes.length && this.indexes[this.head]! <= index) {
      this.bytes -= this.sizes[this.head]!;
      this.head++;
    }
    if (this.head === this.indexes.length) {
      this.reset();
    } else if (this.head > 1024 && this.head * 2 > this.indexes.length) {
      this.indexes.splice(0, this.head);
      this.sizes.splice(0, this.head);
      this.head = 0;
    }
  }

  /** Frees the oldest message: a heartbeat answer shows the follower is reachable though acks were lost. */
  freeFirstOne(): void {
    const first = this.indexes[this.head];
    if (first !== undefined) this.freeLE(first);
  }

  count(): number {
    return this.indexes.length - this.head;
  }

  full(): boolean {
    return this.count() >= this.maxCount || (this.maxBytes > 0 && this.bytes >= this.maxBytes);
  }

  reset(): void {
    this.indexes.length = 0;
    this.sizes.length = 0;
    this.head = 0;
    this.bytes = 0;
  }
}
