import { type ClientErrorOptions, KeyLoadClientError } from "./keyload-client-error.js";

/** No leader or no quorum: nothing was submitted. */
export class UnavailableError extends KeyLoadClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("Unavailable", message, options);
  }
}
