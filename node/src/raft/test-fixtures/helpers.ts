import { MemorySnapshotSink } from "../memory-snapshot-sink.js";
import { MemoryStorage } from "../memory-storage.js";
import type { RaftOptions } from "../raft-config.js";
import { RaftNode } from "../raft-node.js";
import { SeededRandom } from "../seeded-random.js";
import { SnapshotInbox } from "../snapshot-inbox.js";
import type {
  AppendMessage,
  AppendResponseMessage,
  Entry,
  EntryType,
  HardState,
  HeartbeatMessage,
  HeartbeatResponseMessage,
  Message,
  MessageType,
  NodeId,
  RandomSource,
  ReadFailure,
  ReadState,
  Ready,
  Snapshot,
  SnapshotChunkMessage,
  SoftState,
  VoteMessage,
  VoteResponseMessage,
} from "../types.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export const bytes = (s: string): Uint8Array => encoder.encode(s);
export const str = (b: Uint8Array): string => decoder.decode(b);

export function entry(index: number, term: number, data = "", type: EntryType = "normal"): Entry {
  return { index, term, type, data: bytes(data) };
}

/** Entries 1..n whose terms are `terms[i-1]`. */
/** A Ready with nothing in it but `over`. */
export function readyOf(over: Partial<Ready>): Ready {
  return {
    softState: null,
    hardState: null,
    entries: [],
    snapshot: null,
    committedEntries: [],
    messages: [],
    readStates: [],
    readFailures: [],
    ...over,
  };
}

export function entriesWithTerms(terms: readonly number[], first = 1): Entry[] {
  return terms.map((t, i) => entry(first + i, t, `e${first + i}`));
}

/** A MemoryStorage already holding entries with the given terms (indexes 1..n) and a hard state. */
export function storageWithLog(
  voters: readonly NodeId[],
  terms: readonly number[],
  hard: Partial<HardState> = {},
): MemoryStorage {
  const storage = new MemoryStorage({ voters });
  storage.append(entriesWithTerms(terms));
  const lastTerm = terms.length > 0 ? terms[terms.length - 1]! : 0;
  storage.setHardState({ term: hard.term ?? lastTerm, vote: hard.vote ?? null, commit: hard.commit ?? 0 });
  return storage;
}

/** A RandomSource that plays back fixed values (then `fallback`) and records every bound asked for. */
export class ScriptedRandom implements RandomSource {
  readonly bounds: number[] = [];
  private i = 0;
  constructor(
    private readonly values: readonly number[],
    private readonly fallback = 0,
  ) {}
  nextInt(bound: number): number {
    this.bounds.push(bound);
    const v = this.i < this.values.length ? this.values[this.i++]! : this.fallback;
    if (v < 0 || v >= bound) throw new Error(`scripted value ${v} outside [0, ${bound})`);
    return v;
  }
}

/** What one or more Readys handed out, in order. */
export interface Harvest {
  readonly readys: Ready[];
  readonly messages: Message[];
  readonly entries: Entry[];
  readonly committed: Entry[];
  readonly snapshots: Snapshot[];
  readonly hardStates: HardState[];
  readonly softStates: SoftState[];
  readonly readStates: ReadState[];
  readonly readFailures: ReadFailure[];
}

/**
 * Handles every pending Ready of `node` like a driver: persists to `storage` (a snapshot's bytes
 * taken from `inbox`, which received them), then advances.
 */
export function drain(
  node: RaftNode,
  storage: MemoryStorage,
  inbox?: SnapshotInbox<MemorySnapshotSink>,
): Harvest {
  const h: Harvest = {
    readys: [],
    messages: [],
    entries: [],
    committed: [],
    snapshots: [],
    hardStates: [],
    softStates: [],
    readStates: [],
    readFailures: [],
  };
  let guard = 0;
  while (node.hasReady()) {
    if (++guard > 1000) throw new Error("node keeps producing Readys");
    const rd = node.ready();
    h.readys.push(rd);
    if (rd.snapshot) {
      if (!inbox) throw new Error("a snapshot was installed, but no inbox received its bytes");
      storage.applySnapshot(rd.snapshot, inbox.take(rd.snapshot).bytes());
      h.snapshots.push(rd.snapshot);
    }
    storage.append(rd.entries);
    if (rd.hardState) {
      storage.setHardState(rd.hardState);
      h.hardStates.push(rd.hardState);
    }
    if (rd.softState) h.softStates.push(rd.softState);
    h.entries.push(...rd.entries);
    h.committed.push(...rd.committedEntries);
    h.messages.push(...rd.messages);
    h.readStates.push(...rd.readStates);
    h.readFailures.push(...rd.readFailures);
    node.advance();
  }
  return h;
}

export type SoloOptions = Partial<Omit<RaftOptions, "id" | "voters">> & {
  readonly id?: NodeId;
  readonly voters?: readonly NodeId[];
};

/** One core driven by hand with crafted messages; its Readys are persisted to its own MemoryStorage. */
export class Solo {
  readonly node: RaftNode;
  readonly storage: MemoryStorage;
  readonly id: NodeId;
  /** Receives the bytes of snapshot chunks stepped in, as a driver does. */
  readonly inbox = new SnapshotInbox(() => new MemorySnapshotSink());

  constructor(options: SoloOptions = {}, ctor: typeof RaftNode = RaftNode) {
    const { voters = ["a", "b", "c"], ...raftOptions } = options;
    const id = options.id ?? "a";
    this.id = id;
    this.storage = options.storage instanceof MemoryStorage ? options.storage : new MemoryStorage({ voters });
    this.node = new ctor({
      ...raftOptions,
      id,
      storage: this.storage,
      random: options.random ?? new SeededRandom(7),
    });
  }

  /** Steps every message, then handles the resulting Readys. */
  step(...ms: Message[]): Harvest {
    for (const m of ms) this.inbox.step(this.node, m);
    return drain(this.node, this.storage, this.inbox);
  }

  flush(): Harvest {
    return drain(this.node, this.storage, this.inbox);
  }

  tick(times = 1): Harvest {
    for (let i = 0; i < times; i++) this.node.tick();
    return drain(this.node, this.storage, this.inbox);
  }

  /** Terms of the durable log from firstIndex to lastIndex. */
  terms(): number[] {
    const out: number[] = [];
    for (let i = this.storage.firstIndex(); i <= this.storage.lastIndex(); i++)
      out.push(this.storage.term(i));
    return out;
  }
}

/** A message narrowed to one type (for "vote"/"pre-vote", the VoteMessage variant of that type). */
export type MessageOf<T extends MessageType> = Message & { readonly type: T };

export function ofType<T extends MessageType>(ms: readonly Message[], type: T): MessageOf<T>[] {
  return ms.filter((m) => m.type === type) as MessageOf<T>[];
}

// --- message builders ---------------------------------------------------------------------------

export function append(
  from: NodeId,
  to: NodeId,
  term: number,
  index: number,
  logTerm: number,
  entries: readonly Entry[],
  commit: number,
  epoch = 0,
): AppendMessage {
  return { type: "append", from, to, term, index, logTerm, entries, commit, epoch };
}

export function appendResponse(
  from: NodeId,
  to: NodeId,
  term: number,
  index: number,
  reject = false,
  rejectHint = 0,
  logTerm = 0,
  epoch = 0,
): AppendResponseMessage {
  return { type: "append-response", from, to, term, index, reject, rejectHint, logTerm, epoch };
}

export function vote(
  from: NodeId,
  to: NodeId,
  term: number,
  index: number,
  logTerm: number,
  opts: { pre?: boolean; transfer?: boolean; confIndex?: number } = {},
): VoteMessage {
  return {
    type: opts.pre ? "pre-vote" : "vote",
    from,
    to,
    term,
    index,
    logTerm,
    transfer: opts.transfer ?? false,
    confIndex: opts.confIndex ?? 0,
  };
}

export function voteResponse(
  from: NodeId,
  to: NodeId,
  term: number,
  reject: boolean,
  pre = false,
): VoteResponseMessage {
  return { type: pre ? "pre-vote-response" : "vote-response", from, to, term, reject };
}

export function heartbeat(
  from: NodeId,
  to: NodeId,
  term: number,
  commit = 0,
  readRound = 0,
): HeartbeatMessage {
  return { type: "heartbeat", from, to, term, commit, readRound };
}

export function heartbeatResponse(
  from: NodeId,
  to: NodeId,
  term: number,
  readRound = 0,
  unchecked = false,
): HeartbeatResponseMessage {
  return { type: "heartbeat-response", from, to, term, readRound, unchecked };
}

export function snapshotChunk(
  from: NodeId,
  to: NodeId,
  term: number,
  meta: Snapshot["meta"],
  offset: number,
  data: Uint8Array,
  totalBytes: number,
  checksum: number,
  epoch = 0,
): SnapshotChunkMessage {
  return {
    type: "snapshot-chunk",
    from,
    to,
    term,
    meta,
    offset,
    length: data.byteLength,
    totalBytes,
    checksum,
    data,
    epoch,
  };
}

/**
 * A Solo node "a" (voters a, b, c unless given) made leader of term 1 by crafted votes from "b",
 * with its no-op (index lastIndex) committed through an acknowledgement from "b".
 */
export function soloLeader(options: SoloOptions = {}): Solo {
  const s = new Solo(options);
  const term = s.node.status().term + 1;
  s.node.campaign();
  s.flush();
  s.step(voteResponse("b", s.id, term, false, true));
  s.step(voteResponse("b", s.id, term, false));
  const { lastIndex } = s.node.status();
  s.step(appendResponse("b", s.id, term, lastIndex));
  const st = s.node.status();
  if (st.role !== "leader" || st.commit !== lastIndex) throw new Error("soloLeader: setup failed");
  return s;
}
