import { type ClientErrorOptions, KeyLoadClientError } from "./keyload-client-error.js";

/** The lease on a message or delivery expired or was taken over. */
export class LeaseLostError extends KeyLoadClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("LeaseLost", message, options);
  }
}
