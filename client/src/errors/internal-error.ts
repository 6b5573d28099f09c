import { type ClientErrorOptions, KeyLoadClientError } from "./keyload-client-error.js";

/** The voter failed, or answered something that is not the contract's. */
export class InternalError extends KeyLoadClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("Internal", message, options);
  }
}
