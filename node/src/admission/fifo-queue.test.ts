import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FifoQueue } from "./fifo-queue.js";

describe("FifoQueue", () => {
  it("behaves like an array used as a queue, across growth and wrap-around", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.integer(), fc.constant("shift" as const)), { maxLength: 300 }),
        (ops) => {
          const queue = new FifoQueue<number>(2);
          const model: number[] = [];
          for (const op of ops) {
            if (op === "shift") expect(queue.shift()).toBe(model.shift());
            else {
              queue.push(op);
              model.push(op);
            }
            expect(queue.length).toBe(model.length);
            expect(queue.peek()).toBe(model[0]);
          }
        },
      ),
    );
  });
});
