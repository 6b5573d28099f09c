import { checkName } from "../requests/identifiers.js";
import { invalid } from "./json-body.js";

/** A message that exhausts its attempts moves to the queue of this name; that queue never dead-letters. */
export const DEAD_LETTER_SUFFIX = ".dead-letter";

const MAX_QUEUE_CHARS = 256 - DEAD_LETTER_SUFFIX.length;

/** A queue name leaves room for its dead-letter suffix, so every dead-letter queue is addressable too. */
export function checkQueueName(value: string): string {
  checkName("queue", value);
  if (value.length > MAX_QUEUE_CHARS && !isDeadLetterQueue(value)) {
    throw invalid(`a queue name has at most ${MAX_QUEUE_CHARS} characters`, "InvalidIdentifier");
  }
  return value;
}

export function isDeadLetterQueue(queue: string): boolean {
  return queue.endsWith(DEAD_LETTER_SUFFIX);
}

export function deadLetterQueueOf(queue: string): string {
  return `${queue}${DEAD_LETTER_SUFFIX}`;
}
