/** Counters of one transport since it was created, for metrics. Every field only grows. */
export interface PeerStats {
  framesSent: number;
  bytesSent: number;
  framesReceived: number;
  bytesReceived: number;
  /** Raft messages or responses not sent: no connection, a full write buffer, or unencodable. */
  sendDrops: number;
  /** Raft messages received but not delivered: spoofed `from`, misrouted `to`, or no handler. */
  receiveDrops: number;
  /** Dials made after a failed dial or a lost connection. */
  reconnects: number;
  /** Handshakes that ended in a refusal, whichever side refused. */
  authFailures: number;
  /** Connections closed because the other side sent bytes that are not valid frames or messages. */
  protocolErrors: number;
  /**
   * Frames that failed their authentication: sealed records that fail their tag, unsealed frames after
   * the handshake, and unsealed frames during it that no handshake step asked for.
   */
  unauthenticFrames: number;
  /** Connections closed at once because their source already had too many in the handshake. */
  handshakesOverCap: number;
}

export function emptyPeerStats(): PeerStats {
  return {
    framesSent: 0,
    bytesSent: 0,
    framesReceived: 0,
    bytesReceived: 0,
    sendDrops: 0,
    receiveDrops: 0,
    reconnects: 0,
    authFailures: 0,
    protocolErrors: 0,
    unauthenticFrames: 0,
    handshakesOverCap: 0,
  };
}
