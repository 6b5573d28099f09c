import { afterEach } from "vitest";
import type { KeyLoadClientOptions } from "../client-options.js";
import { KeyLoadClient } from "../keyload-client.js";
import { type ScriptedAnswer, ScriptedVoter } from "./scripted-voter.js";

export interface ScriptedVoters {
  /** A ScriptedVoter giving `answers` in turn. */
  voter(...answers: ScriptedAnswer[]): Promise<ScriptedVoter>;
  /** A client of `endpoints`: no throttle, millisecond backoff, the file's defaults, then `options`. */
  client(endpoints: readonly string[], options?: Partial<KeyLoadClientOptions>): KeyLoadClient;
}

/** For a test file: scripted voters and clients of them, all closed after each test. */
export function scriptedVoters(defaults: Partial<KeyLoadClientOptions> = {}): ScriptedVoters {
  const opened: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((o) => o.close()));
  });
  return {
    async voter(...answers) {
      const v = await ScriptedVoter.start(...answers);
      opened.push(v);
      return v;
    },
    client(endpoints, options = {}) {
      const c = new KeyLoadClient({
        endpoints,
        apiKey: "key-1",
        adaptiveThrottle: false,
        backoff: { initialMs: 1, maxMs: 5 },
        ...defaults,
        ...options,
      });
      opened.push(c);
      return c;
    },
  };
}

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
  const scripted = scriptedVoters(defaults);
  return async (answers, options = {}) => {
    const v = await scripted.voter(...answers);
    return { v, c: scripted.client([v.url], options) };
  };
}
