import { type ClientErrorOptions, KeyLoadClientError } from "./keyload-client-error.js";

/** The API key is missing or not valid. */
export class UnauthenticatedError extends KeyLoadClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("Unauthenticated", message, options);
  }
}
