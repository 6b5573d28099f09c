import { type ClientErrorOptions, KeyLoadClientError } from "./keyload-client-error.js";

/** No such document, route, message, subscription or committed command. */
export class NotFoundError extends KeyLoadClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("NotFound", message, options);
  }
}
