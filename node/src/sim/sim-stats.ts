/** What one run did, summed over its nodes; the CLI prints it and tests assert on it. */
export interface SimStats {
  readonly steps: number;
  readonly convergenceSteps: number;
  readonly time: number;
  /** Terms that had a leader. */
  readonly leaders: number;
  readonly maxTerm: number;
  /** The highest index any node applied. */
  readonly committed: number;
  readonly proposals: number;
  readonly proposalsRefused: number;
  readonly acked: number;
  /** Accepted proposals whose index ended up holding another entry (never acknowledged). */
  readonly proposalsLost: number;
  /** Accepted proposals still pending when their node crashed. */
  readonly proposalsAbandoned: number;
  readonly reads: number;
  readonly readsRefused: number;
  readonly readsConfirmed: number;
  readonly readsServed: number;
  readonly readsFailed: number;
  readonly transfers: number;
  readonly transfersRefused: number;
  readonly messagesSent: number;
  readonly messagesDelivered: number;
  readonly messagesDropped: number;
  readonly messagesDuplicated: number;
  /** Snapshot chunks delivered. */
  readonly snapshotChunks: number;
  /** Snapshot chunks sent with a byte flipped, and snapshots the receiver refused for its checksum. */
  readonly snapshotChunksCorrupted: number;
  readonly snapshotsRefused: number;
  readonly fsyncs: number;
  readonly crashes: number;
  /** Power losses of the whole cluster (every running node crashed at once). */
  readonly powerLosses: number;
  /** Nodes paused for a while, their messages held until they resumed. */
  readonly pauses: number;
  /** Crashes that lost a written but unsynced Ready. */
  readonly lostWrites: number;
  /** Starts that raised the stored commit index to what the state machine kept. */
  readonly commitsRaised: number;
  readonly restarts: number;
  readonly partitions: number;
  readonly bursts: number;
  /** Local snapshots taken: with their files, or points on a lazy disk. */
  readonly snapshotsTaken: number;
  readonly snapshotsInstalled: number;
  /** Disks that keep lazy snapshots (LazySnapshotStorage), of all the nodes the run started. */
  readonly lazyDisks: number;
  /**
   * Lazy snapshots: the core's asks answered null (on a point), transfers a leader dropped on such an
   * answer (its file superseded by the point), and copies made for them.
   */
  readonly snapshotsUnavailable: number;
  readonly snapshotTransfersAbandoned: number;
  readonly snapshotsCopied: number;
  /** Membership changes the operator proposed, and those refused (to be retried later). */
  readonly confChanges: number;
  readonly confChangesRefused: number;
  /** Fresh nodes started to join the cluster. */
  readonly joins: number;
  /** Disks lost for good, each node leaving the cluster. */
  readonly wipes: number;
}

export type Counters = { -readonly [K in keyof SimStats]: number };

export function emptyCounters(): Counters {
  return {
    steps: 0,
    convergenceSteps: 0,
    time: 0,
    leaders: 0,
    maxTerm: 0,
    committed: 0,
    proposals: 0,
    proposalsRefused: 0,
    acked: 0,
    proposalsLost: 0,
    proposalsAbandoned: 0,
    reads: 0,
    readsRefused: 0,
    readsConfirmed: 0,
    readsServed: 0,
    readsFailed: 0,
    transfers: 0,
    transfersRefused: 0,
    messagesSent: 0,
    messagesDelivered: 0,
    messagesDropped: 0,
    messagesDuplicated: 0,
    snapshotChunks: 0,
    snapshotChunksCorrupted: 0,
    snapshotsRefused: 0,
    fsyncs: 0,
    crashes: 0,
    powerLosses: 0,
    pauses: 0,
    lostWrites: 0,
    commitsRaised: 0,
    restarts: 0,
    partitions: 0,
    bursts: 0,
    snapshotsTaken: 0,
    snapshotsInstalled: 0,
    lazyDisks: 0,
    snapshotsUnavailable: 0,
    snapshotTransfersAbandoned: 0,
    snapshotsCopied: 0,
    confChanges: 0,
    confChangesRefused: 0,
    joins: 0,
    wipes: 0,
  };
}
