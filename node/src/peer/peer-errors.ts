/**
 * Typed errors of the peer transport. Each carries a stable `code` callers match on; messages are for
 * people. The three request failures are deliberately distinct because they mean different things to a
 * forwarding follower: nothing was sent (safe to report Unavailable), the outcome is unknown (must report
 * UnknownWriteOutcome), or the leader answered with an explicit refusal (returned unchanged).
 */

export class PeerError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Bytes that do not form a valid frame or message; the connection they came on is closed. */
export class PeerProtocolError extends PeerError {
  constructor(message: string) {
    super("PeerProtocol", message);
  }
}

export type PeerHandshakeFailure =
  /** The dialer's id is not among the configured voters (or is this node's own id). */
  | "UnknownPeer"
  /** The connection reached another voter than the one dialed: an address is misconfigured. */
  | "WrongPeer"
  /** The other side could not prove knowledge of the cluster secret. */
  | "BadProof"
  /** The canonical limits differ; the message names each differing limit with both values. */
  | "LimitsMismatch"
  /** The peer belongs to another cluster: the message names both cluster IDs. */
  | "ClusterMismatch"
  /** The peer is a new incarnation of a member seen before: it lost its storage (MemberIncarnations). */
  | "IncarnationMismatch"
  | "VersionMismatch"
  /** The other side refused; `remoteReason` says why. */
  | "Refused"
  | "Timeout"
  /** The connection ended before the handshake completed. */
  | "Disconnected";

/** A connection that did not complete the mutual authentication handshake. */
export class PeerHandshakeError extends PeerError {
  readonly reason: PeerHandshakeFailure;
  /** The peer id the other side claimed or was expected to have, when known. */
  readonly peerId: string | null;
  /** For `Refused`: the reason the other side gave. */
  readonly remoteReason: string | null;
  constructor(reason: PeerHandshakeFailure, peerId: string | null, message: string, remoteReason?: string) {
    super("PeerHandshake", message);
    this.reason = reason;
    this.peerId = peerId;
    this.remoteReason = remoteReason ?? null;
  }
}

/** An authenticated connection ended: closed by either side, reset, or shut down with the transport. */
export class PeerConnectionClosedError extends PeerError {
  constructor(message: string) {
    super("PeerConnectionClosed", message);
  }
}

/** The request was not sent: no authenticated connection to the peer, or its write buffer is full. */
export class PeerUnavailableError extends PeerError {
  readonly peerId: string;
  constructor(peerId: string, detail: string) {
    super("PeerUnavailable", `peer ${peerId} is unavailable: ${detail}`);
    this.peerId = peerId;
  }
}

export type PeerInterruption = "timeout" | "disconnected" | "aborted" | "closed";

/**
 * The request may have been sent but no answer came: the peer may or may not have acted on it. An abort
 * is reported this way even before sending, since a caller that aborts has given up on knowing.
 */
export class PeerInterruptedError extends PeerError {
  readonly peerId: string;
  readonly reason: PeerInterruption;
  constructor(peerId: string, reason: PeerInterruption) {
    super("PeerInterrupted", `request to peer ${peerId} interrupted (${reason}); its outcome is unknown`);
    this.peerId = peerId;
    this.reason = reason;
  }
}

/** The peer's handler answered with an error; `remoteCode` is the code it threw, or `Internal`. */
export class PeerRemoteError extends PeerError {
  readonly peerId: string;
  readonly remoteCode: string;
  constructor(peerId: string, remoteCode: string, message: string) {
    super("PeerRemote", message);
    this.peerId = peerId;
    this.remoteCode = remoteCode;
  }
}
