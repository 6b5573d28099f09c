/** A source could not be transpiled or its output written; the message names the file and the reason. */
export class TranspileError extends Error {
  readonly code = "TranspileFailed";
  readonly file: string;

  constructor(file: string, reason: string, options?: ErrorOptions) {
    super(`cannot transpile ${file}: ${reason}`, options);
    this.name = new.target.name;
    this.file = file;
  }
}
