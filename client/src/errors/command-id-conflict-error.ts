import { type ClientErrorOptions, KeyLoadClientError } from "./keyload-client-error.js";

/** The command ID committed with another route or body. */
export class CommandIdConflictError extends KeyLoadClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("CommandIdConflict", message, options);
  }
}
