import { type ClientErrorOptions, KeyLoadClientError } from "./keyload-client-error.js";

/** A version or etag did not match. */
export class FailedPreconditionError extends KeyLoadClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("FailedPrecondition", message, options);
  }
}
