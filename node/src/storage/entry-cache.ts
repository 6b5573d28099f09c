import { entrySize } from "../raft/log-storage.js";
import type { Entry } from "../raft/types.js";

/**
 * The most recent entries, so a leader reading back what it just appended (to replicate it) and a
 * follower catching up from a short lag are answered from memory. It always ends at the log's last
 * index and holds at most `maxEntries` entries and `maxBytes` bytes: older entries are evicted first.
 */
export class EntryCache {
  private items: Entry[] = [];
  /** items[head] is the oldest cached entry; evicted slots before it are reclaimed in bulk. */
  private head = 0;
  private first: number;
  private bytes = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
    nextIndex: number,
  ) {
    this.first = nextIndex;
  }

  /** The oldest cached index; the cache is empty when this exceeds the log's last index. */
  get firstIndex(): number {
    return this.first;
  }

  get byteSize(): number {
    return this.bytes;
  }

  get length(): number {
    return this.items.length - this.head;
  }

  /** Adds the entry following the cached ones. */
  append(entry: Entry): void {
    this.items.push(entry);
    this.bytes += entrySize(entry);
    while (this.length > this.maxEntries || (this.bytes > this.maxBytes && this.length > 0)) {
      this.bytes -= entrySize(this.items[this.head]!);
      this.head++;
      this.first++;
    }
    this.reclaim();
  }

  /** Forgets the entries from `index` on (a conflicting suffix being replaced). */
  truncateFrom(index: number): void {
    if (index <= this.first) {
      this.reset(index);
      return;
    }
    const keep = this.head + (index - this.first);
    for (let i = keep; i < this.items.length; i++) this.bytes -= entrySize(this.items[i]!);
    this.items.length = Math.min(this.items.length, keep);
  }

  /** Forgets the entries up to and including `index` (compacted away). */
  dropTo(index: number): void {
    const end = this.first + this.length;
    if (index + 1 >= end) {
      this.reset(Math.max(end, index + 1));
      return;
    }
    while (this.first <= index) {
      this.bytes -= entrySize(this.items[this.head]!);
      this.head++;
      this.first++;
    }
    this.reclaim();
  }

  /** Empties the cache; the next entry appended will be `nextIndex`. */
  reset(nextIndex: number): void {
    this.items = [];
    this.head = 0;
    this.bytes = 0;
    this.first = nextIndex;
  }

  /** Cached entries in [lo, hi), which the caller has checked lie within the cache. */
  slice(lo: number, hi: number): Entry[] {
    return this.items.slice(this.head + (lo - this.first), this.head + (hi - this.first));
  }

  private reclaim(): void {
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}
