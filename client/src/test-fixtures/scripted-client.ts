import { afterEach } from "vitest";
import type { KeyLoadClientOptions } from "../client-options.js";
import { KeyLoadClient } from "../keyload-client.js";
import { type ScriptedAnswer, ScriptedVoter } from "./scripted-voter.js";

/**
 * For a test file: starts a ScriptedVoter with `answers` and a client of it (no throttle, millisecond
 * backoff, `defaults` and then `options` over that), both closed after each test.
 */
export function scriptedClients(
  defaults: Partial<KeyLoadClientOptions> = {},
): (
  answers: readonly ScriptedAnswer[],
  options?: Partial<KeyLoadClientOptions>,
) => Promise<{ v: ScriptedVoter; c: KeyLoadClient }> {
  const opened: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((o) => o.close()));
  });
  return async (answers, options = {}) => {
    const v = await ScriptedVoter.start(...answers);
    const c = new KeyLoadClient({
      endpoints: [v.url],
      apiKey: "key-1",
      adaptiveThrottle: false,
      backoff: { initialMs: 1, maxMs: 5 },
      ...defaults,
      ...options,
    });
    opened.push(v, c);
    return { v, c };
  };
}
