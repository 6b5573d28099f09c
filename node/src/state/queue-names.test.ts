import { OutboxMessageSchema, PATH_PARAM_SCHEMAS } from "@keyload/contract";
import { describe, expect, it } from "vitest";
import { checkQueueName } from "./queue-names.js";

const accepts = (name: string): boolean => {
  try {
    checkQueueName(name);
    return true;
  } catch {
    return false;
  }
};

describe("queue names", () => {
  const samples = [
    "q",
    "jobs.dead-letter",
    "a b",
    "",
    "q".repeat(244),
    "q".repeat(245),
    `${"q".repeat(244)}.dead-letter`,
    `${"q".repeat(245)}.dead-letter`,
    `${"q".repeat(250)}.dead`,
    "q".repeat(257),
  ];

  it("are refused by the edge's schemas exactly as the state machine refuses them", () => {
    const inPath = new RegExp(PATH_PARAM_SCHEMAS.queue.pattern!, "u");
    const inOutbox = new RegExp(OutboxMessageSchema.properties.queue.pattern!, "u");
    for (const sample of samples) {
      expect(inPath.test(sample), sample).toBe(accepts(sample));
      expect(inOutbox.test(sample), sample).toBe(accepts(sample));
    }
  });

  it("leave room for the dead-letter suffix, so every queue's dead-letter queue is addressable", () => {
    expect(accepts("q".repeat(244))).toBe(true);
    expect(accepts("q".repeat(245))).toBe(false);
    expect(accepts(`${"q".repeat(244)}.dead-letter`)).toBe(true);
  });
});
