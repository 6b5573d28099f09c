/**
 * A binary min-heap of timed events. Ties on time are broken by insertion order, so two runs that
 * schedule the same events in the same order pop them in the same order: replay depends on it.
 */
export class EventQueue<T> {
  private times: number[] = [];
  private seqs: number[] = [];
  private values: T[] = [];
  private nextSeq = 0;

  get size(): number {
    return this.values.length;
  }

  push(time: number, value: T): void {
    let i = this.values.length;
    const seq = this.nextSeq++;
    this.times.push(time);
    this.seqs.push(seq);
    this.values.push(value);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!less(time, seq, this.times[parent]!, this.seqs[parent]!)) break;
      this.move(parent, i);
      i = parent;
    }
    this.times[i] = time;
    this.seqs[i] = seq;
    this.values[i] = value;
  }

  /** The time of the earliest event, or `Infinity` when empty. */
  peekTime(): number {
    return this.values.length === 0 ? Number.POSITIVE_INFINITY : this.times[0]!;
  }

  pop(): { time: number; value: T } | undefined {
    const n = this.values.length;
    if (n === 0) return undefined;
    const top = { time: this.times[0]!, value: this.values[0]! };
    const lastTime = this.times.pop()!;
    const lastSeq = this.seqs.pop()!;
    const lastValue = this.values.pop()!;
    if (n > 1) {
      let i = 0;
      const size = n - 1;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= size) break;
        const right = left + 1;
        const child =
          right < size && less(this.times[right]!, this.seqs[right]!, this.times[left]!, this.seqs[left]!)
            ? right
            : left;
        if (!less(this.times[child]!, this.seqs[child]!, lastTime, lastSeq)) break;
        this.move(child, i);
        i = child;
      }
      this.times[i] = lastTime;
      this.seqs[i] = lastSeq;
      this.values[i] = lastValue;
    }
    return top;
  }

  private move(from: number, to: number): void {
    this.times[to] = this.times[from]!;
    this.seqs[to] = this.seqs[from]!;
    this.values[to] = this.values[from]!;
  }
}

function less(timeA: number, seqA: number, timeB: number, seqB: number): boolean {
  return timeA < timeB || (timeA === timeB && seqA < seqB);
}
