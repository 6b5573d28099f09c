/** A configuration value that cannot be used: the voter stops at start with this message. */
export class ConfigError extends Error {
  readonly code = "KeyLoadInvalidConfiguration";
  /** The key as the contract spells it, e.g. `KeyLoad:Raft:ElectionTimeoutMs`. */
  readonly key: string;

  constructor(key: string, message: string) {
    super(`${key}: ${message}`);
    this.name = new.target.name;
    this.key = key;
  }
}
