/**
 * Typed errors of the durable storage. Each carries a stable `code` the driver and the operator
 * tooling match on; messages are for people.
 */

export class StorageError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/**
 * What is on disk is not what was written: a checksum mismatch, a missing or out-of-order entry, a
 * torn or truncated write-ahead log that lost acknowledged writes. The node must not serve from this
 * directory; rebuilding it from a peer's snapshot is the remedy.
 */
export class StorageCorruptionError extends StorageError {
  /** The file found damaged. */
  readonly file: string;
  /** The first log index affected, or null when the damage is not tied to one entry. */
  readonly index: number | null;
  constructor(file: string, index: number | null, detail: string, options?: ErrorOptions) {
    super("StorageCorruption", `${file}${index === null ? "" : ` at index ${index}`}: ${detail}`, options);
    this.file = file;
    this.index = index;
  }
}

/** The data directory was written by another program or another version of this format. */
export class StorageFormatError extends StorageError {
  readonly file: string;
  constructor(file: string, detail: string) {
    super("StorageUnsupportedFormat", `${file}: ${detail}`);
    this.file = file;
  }
}

/**
 * An I/O operation failed (a write, an fsync, a checkpoint). After a failed fsync the kernel may have
 * dropped the dirty pages, so nothing written since the last good fsync can be trusted: the store
 * stops accepting work and every later call fails with this error (fail-stop).
 */
export class StorageFailedError extends StorageError {
  constructor(detail: string, options?: ErrorOptions) {
    super("StorageFailed", `storage stopped after a failure: ${detail}`, options);
  }
}

export class StorageClosedError extends StorageError {
  constructor() {
    super("StorageClosed", "the store is closed");
  }
}

/** A caller passed a value the storage API does not accept (a non-integer index, a negative size). */
export class StorageArgumentError extends StorageError {
  constructor(detail: string) {
    super("StorageInvalidArgument", detail);
  }
}

/** A snapshot chunk did not start where the received bytes end; the sender resends from `expected`. */
export class SnapshotChunkOutOfOrderError extends StorageError {
  readonly expected: number;
  constructor(expected: number, offset: number) {
    super("SnapshotChunkOutOfOrder", `snapshot chunk at offset ${offset}, expected offset ${expected}`);
    this.expected = expected;
  }
}

/** A received snapshot does not have the announced size or checksum. */
export class SnapshotMismatchError extends StorageError {
  constructor(detail: string) {
    super("SnapshotMismatch", detail);
  }
}
