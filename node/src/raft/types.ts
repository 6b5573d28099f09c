/**
 * Plain data exchanged between the Raft core, its storage and its driver. Everything here is
 * serialisable and immutable once handed over: the core never mutates an entry or a message after
 * it leaves, so a transport may hold or duplicate them freely.
 */

export type NodeId = string;

/**
 * The highest term a message may carry. Terms grow by one an election, so no cluster comes near it; one
 * message at the top of the safe integers, adopted by every voter through their replies, would leave
 * no next term to campaign in, and the cluster without a leader for good.
 */
export const MAX_TERM = 2 ** 52;

/**
 * `noop` is the empty entry a new leader appends so it can commit entries of earlier terms; `conf`
 * holds a membership change (conf-change.ts), which takes effect when it is applied.
 */
export type EntryType = "normal" | "noop" | "conf";

export interface Entry {
  readonly term: number;
  readonly index: number;
  readonly type: EntryType;
  readonly data: Uint8Array;
}

export interface HardState {
  readonly term: number;
  readonly vote: NodeId | null;
  readonly commit: number;
}

/** The membership configuration, as of some applied index; carried in snapshots. */
export interface ConfState {
  readonly voters: readonly NodeId[];
  /** Members that receive the log but neither vote nor count toward a commit; absent means none. */
  readonly learners?: readonly NodeId[];
}

export interface SnapshotMeta {
  readonly index: number;
  readonly term: number;
  readonly conf: ConfState;
}

/**
 * A snapshot as the core knows it: what it covers, and the size and checksum of its bytes. The bytes
 * themselves stay in storage and travel chunk by chunk outside the core (SnapshotChunkMessage), as
 * etcd-raft deals in snapshot metadata while its transport streams the database file.
 */
export interface Snapshot {
  readonly meta: SnapshotMeta;
  /** Bytes in the snapshot. */
  readonly size: number;
  /** CRC-32C of those bytes: every chunk carries it, so the receiver checks what it assembled. */
  readonly checksum: number;
}

export type Role = "follower" | "pre-candidate" | "candidate" | "leader";

interface MessageBase {
  readonly from: NodeId;
  readonly to: NodeId;
  readonly term: number;
}

export interface AppendMessage extends MessageBase {
  readonly type: "append";
  /** Index and term of the entry preceding `entries`. */
  readonly index: number;
  readonly logTerm: number;
  readonly entries: readonly Entry[];
  readonly commit: number;
  /** The leader's replication epoch for this follower when it sent this (Progress.epoch). */
  readonly epoch: number;
  /**
   * Set by the leader on an entry-less append that only tells the follower how far the commit moved,
   * which its driver may hold back until its next message to that follower (HeldAppendOutbox). Not on
   * the wire; a probe, which asks the follower to check its log, never carries it.
   */
  readonly commitNotice?: true;
}

export interface AppendResponseMessage extends MessageBase {
  readonly type: "append-response";
  /** On success the last index now matching the leader; on rejection the probed index. */
  readonly index: number;
  readonly reject: boolean;
  /** On rejection: a hint (index, term) from the follower's log for fast backtracking. */
  readonly rejectHint: number;
  readonly logTerm: number;
  /** The epoch of the append or snapshot chunk this answers; 0 when it answers neither. */
  readonly epoch: number;
}

export interface VoteMessage extends MessageBase {
  readonly type: "vote" | "pre-vote";
  readonly index: number;
  readonly logTerm: number;
  /** Set by a leadership transfer: the receiver must not ignore it for an unexpired leader lease. */
  readonly transfer: boolean;
  /**
   * The index of the configuration the candidate campaigns under, the last it applied (so committed):
   * a voter that has not applied as far may not know of it, nor so of the candidate (see
   * RaftNode.mayAskForVotes). 0 for the bootstrap configuration.
   */
  readonly confIndex: number;
}

export interface VoteResponseMessage extends MessageBase {
  readonly type: "vote-response" | "pre-vote-response";
  readonly reject: boolean;
}

export interface HeartbeatMessage extends MessageBase {
  readonly type: "heartbeat";
  readonly commit: number;
  /** The highest ReadIndex round this heartbeat confirms, or 0. */
  readonly readRound: number;
}

export interface HeartbeatResponseMessage extends MessageBase {
  readonly type: "heartbeat-response";
  readonly readRound: number;
  /**
   * The heartbeat's commit lies past what an append of this leader has shown the follower's log to
   * match: the follower committed no further, and asks for an append to check the rest.
   */
  readonly unchecked: boolean;
}

/**
 * Bytes [offset, offset + length) of a snapshot. The core emits and takes chunks without their bytes
 * (`data` null): the sender's driver reads them from its snapshot file as it sends, and the receiver's
 * driver writes them to a temporary file before it steps the chunk (snapshot-inbox.ts). Only the
 * wire carries `data`, of exactly `length` bytes.
 */
export interface SnapshotChunkMessage extends MessageBase {
  readonly type: "snapshot-chunk";
  readonly meta: SnapshotMeta;
  readonly offset: number;
  readonly length: number;
  readonly totalBytes: number;
  /** CRC-32C of the whole snapshot. */
  readonly checksum: number;
  readonly data: Uint8Array | null;
  /** The leader's replication epoch for this follower when it sent this, echoed by the answers. */
  readonly epoch: number;
}

export interface SnapshotChunkResponseMessage extends MessageBase {
  readonly type: "snapshot-chunk-response";
  readonly snapshotIndex: number;
  readonly snapshotTerm: number;
  /** The offset the follower expects next; `totalBytes` once it holds the whole snapshot. */
  readonly nextOffset: number;
  /** The chunk did not follow what the follower holds: resend from `nextOffset`. */
  readonly reject: boolean;
}

/** A follower asks the leader to confirm a read index on its behalf. */
export interface ReadIndexMessage extends MessageBase {
  readonly type: "read-index";
  readonly requestId: string;
}

export interface ReadIndexResponseMessage extends MessageBase {
  readonly type: "read-index-response";
  readonly requestId: string;
  /** 0 with `reject` when the leader could not serve it. */
  readonly index: number;
  readonly reject: boolean;
}

export interface TimeoutNowMessage extends MessageBase {
  readonly type: "timeout-now";
}

export type Message =
  | AppendMessage
  | AppendResponseMessage
  | VoteMessage
  | VoteResponseMessage
  | HeartbeatMessage
  | HeartbeatResponseMessage
  | SnapshotChunkMessage
  | SnapshotChunkResponseMessage
  | ReadIndexMessage
  | ReadIndexResponseMessage
  | TimeoutNowMessage;

export type MessageType = Message["type"];

/** A confirmed linearizable read: once the local state machine has applied `index`, serve it. */
export interface ReadState {
  readonly requestId: string;
  readonly index: number;
}

/** A read that can no longer be confirmed (leadership was lost or the leader refused it). */
export interface ReadFailure {
  readonly requestId: string;
  readonly reason: "NotLeader" | "NoLeader" | "LeadershipLost";
}

export interface SoftState {
  readonly role: Role;
  readonly leader: NodeId | null;
  readonly term: number;
}

/**
 * One batch of work for the driver, handled in this order: persist `snapshot` (its bytes, which the
 * driver received into a temporary file through a SnapshotInbox, sealed first), `entries` and
 * `hardState` durably (fsync); then send `messages`; then apply `snapshot` and `committedEntries` to the
 * state machine; then call `advance()`. Messages must never be sent before what precedes them is durable,
 * except those `canSendBeforePersist` allows: a leader's replication traffic, which may leave while the
 * leader writes its own copy, since the leader counts that copy toward a quorum only after `advance()`.
 */
export interface Ready {
  readonly softState: SoftState | null;
  readonly hardState: HardState | null;
  /** Entries to append; an entry at an index already stored replaces it and everything after it. */
  readonly entries: readonly Entry[];
  readonly snapshot: Snapshot | null;
  readonly committedEntries: readonly Entry[];
  readonly messages: readonly Message[];
  readonly readStates: readonly ReadState[];
  readonly readFailures: readonly ReadFailure[];
}

/** The deterministic randomness the core may use (election timeouts). Never `Math.random`. */
export interface RandomSource {
  /** An integer in [0, bound). */
  nextInt(bound: number): number;
}

const LEADER_TRAFFIC: ReadonlySet<MessageType> = new Set<MessageType>([
  "append",
  "heartbeat",
  "snapshot-chunk",
  "timeout-now",
  "read-index-response",
]);

/**
 * Whether a message of a Ready may be sent before that Ready is durable. Only a leader sends these, and
 * none of them vouches for anything the sender has not yet persisted: votes, vote requests and append
 * answers (which promise durability) must wait.
 */
export function canSendBeforePersist(m: Message): boolean {
  return LEADER_TRAFFIC.has(m.type);
}
