import { type ClientErrorOptions, KeyLoadClientError } from "./keyload-client-error.js";

/** The write may or may not have committed: resubmit it with the same command ID (`resolveOutcome`) to learn which. */
export class UnknownWriteOutcomeError extends KeyLoadClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("UnknownWriteOutcome", message, options);
  }
}
