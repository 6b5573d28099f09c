import { type ClientErrorOptions, KeyLoadClientError } from "./keyload-client-error.js";

/** Malformed JSON, wrong types, a bad command ID or a canonical limit exceeded. */
export class InvalidArgumentError extends KeyLoadClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("InvalidArgument", message, options);
  }
}
