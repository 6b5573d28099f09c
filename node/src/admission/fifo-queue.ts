/**
 * A first-in first-out queue on a ring buffer: push and shift are O(1) and allocate nothing until the
 * buffer doubles, where Array#shift on a long array moves every element.
 */
export class FifoQueue<T> {
  private items: (T | undefined)[];
  private head = 0;
  private count = 0;

  constructor(initialCapacity = 16) {
    let capacity = 1;
    while (capacity < initialCapacity) capacity *= 2;
    this.items = new Array<T | undefined>(capacity).fill(undefined);
  }

  get length(): number {
    return this.count;
  }

  push(item: T): void {
    if (this.count === this.items.length) this.grow();
    this.items[(this.head + this.count) & (this.items.length - 1)] = item;
    this.count++;
  }

  peek(): T | undefined {
    return this.count === 0 ? undefined : this.items[this.head];
  }

  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.items[this.head];
    // Clearing the slot lets a settled command be collected while the buffer lives on.
    this.items[this.head] = undefined;
    this.head = (this.head + 1) & (this.items.length - 1);
    this.count--;
    return item;
  }

  private grow(): void {
    const old = this.items;
    const items = new Array<T | undefined>(old.length * 2).fill(undefined);
    for (let i = 0; i < this.count; i++) items[i] = old[(this.head + i) & (old.length - 1)];
    this.items = items;
    this.head = 0;
  }
}
