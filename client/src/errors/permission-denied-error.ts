import { type ClientErrorOptions, KeyLoadClientError } from "./keyload-client-error.js";

/** The key's principal lacks a role the route needs. */
export class PermissionDeniedError extends KeyLoadClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("PermissionDenied", message, options);
  }
}
