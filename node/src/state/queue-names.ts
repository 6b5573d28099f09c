import { DEAD_LETTER_SUFFIX, MAX_QUEUE_NAME_CHARS, QUEUE_NAME_PATTERN } from "@keyload/contract";
import { checkName } from "../requests/identifiers.js";
import { invalid } from "./json-body.js";

export { DEAD_LETTER_SUFFIX } from "@keyload/contract";

/** The contract's queue name, the very one the edge's schemas check: the voter refuses what the edge would. */
const QUEUE_NAME = new RegExp(QUEUE_NAME_PATTERN);

/** A queue name leaves room for its dead-letter suffix, so every dead-letter queue is addressable too. */
export function checkQueueName(value: string): string {
  checkName("queue", value);
  if (!QUEUE_NAME.test(value)) {
    throw invalid(
      `a queue name has at most ${MAX_QUEUE_NAME_CHARS} characters, or that and ${DEAD_LETTER_SUFFIX}`,
      "InvalidIdentifier",
    );
  }
  return value;
}

export function isDeadLetterQueue(queue: string): boolean {
  return queue.endsWith(DEAD_LETTER_SUFFIX);
}

export function deadLetterQueueOf(queue: string): string {
  return `${queue}${DEAD_LETTER_SUFFIX}`;
}
