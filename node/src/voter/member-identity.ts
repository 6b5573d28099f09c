import { randomBytes } from "node:crypto";
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { InternalError } from "@keyload/contract";
import type { Logger } from "pino";
import { ConfigError } from "../config/config-error.js";
import type { ClusterId } from "../peer/cluster-id.js";
import type { MemberIncarnation, MemberIncarnations } from "../peer/member-incarnations.js";
import { incarnationOf, memberName } from "../peer/member-name.js";
import { bootstrapState } from "../raft/bootstrap.js";
import type { DurableLogStore } from "../storage/durable-log-store.js";
import { StorageFailedError } from "../storage/storage-errors.js";

const FILE = "member.json";

interface Stored {
  readonly clusterId: string | null;
  readonly memberId: string;
  /** Made with this storage: a voter that loses it and is made again is another incarnation. */
  readonly incarnation: string;
  /** The incarnation seen of each peer, by member ID. */
  readonly peers: Readonly<Record<string, string>>;
}

/**
 * Who this voter is in its cluster, kept beside its log: the cluster's ID and its own Raft member ID.
 *
 * A voter bootstraps a new cluster only when told to (`Cluster.BootstrapId`) and only on empty
 * storage: it writes the configuration as its log's first entry and is a voter under its own name.
 * A voter on empty storage that was not told to is a new member: a new incarnation of its name
 * (`name~token`) with no configuration, which never votes or counts toward a commit until the cluster
 * adds it as a learner and promotes it (which it asks for itself, MemberJoiner). So a voter that lost its data can never vote with, or count
 * toward a commit, what it no longer holds, nor answer for votes its earlier incarnation cast.
 *
 * Told to bootstrap again after it lost its storage (`Cluster.BootstrapId` left in its configuration),
 * a voter comes back under its earlier member ID. Its incarnation, made with the storage, tells it
 * apart: peers that saw the earlier one refuse it (MemberIncarnations).
 */
export class MemberIdentity implements ClusterId, MemberIncarnations {
  private failure: StorageFailedError | null = null;
  private readonly failureListeners: ((err: StorageFailedError) => void)[] = [];

  private constructor(
    private readonly file: string,
    private stored: Stored,
    private readonly log: Logger,
  ) {}

  /**
   * Reads the identity kept in `raftDir`, or makes one: bootstrapping when `bootstrapId` is given and
   * the store is empty. A store that holds data without a kept identity dates from before identities
   * were kept: it is its name's first incarnation, its cluster ID learnt from its peers.
   */
  static async open(
    raftDir: string,
    name: string,
    store: DurableLogStore,
    bootstrap: { readonly clusterId: string; readonly voters: readonly string[] } | null,
    log: Logger,
  ): Promise<MemberIdentity> {
    const file = join(raftDir, FILE);
    if (existsSync(file)) {
      const stored = read(file);
      // Another voter's data dir: this process would act as that member, with its term and its vote,
      // beside the voter that is it.
      if (memberName(stored.memberId) !== name) {
        throw new ConfigError(
          "KeyLoad:Node:Id",
          `is ${name}, but ${dirname(raftDir)} holds member ${stored.memberId}: check KeyLoad:Node:DataDir`,
        );
      }
      if (bootstrap !== null) checkBootstrapAgainst(stored, bootstrap.clusterId, dirname(raftDir), store);
      if (stored.incarnation !== "") return new MemberIdentity(file, stored, log);
      // Kept before incarnations were: this storage's incarnation is made now, before any peer saw one.
      const kept = { ...stored, incarnation: newIncarnation() };
      write(file, kept);
      return new MemberIdentity(file, kept, log);
    }
    let stored: Stored;
    if (!isEmpty(store)) {
      stored = { clusterId: null, memberId: name, incarnation: newIncarnation(), peers: {} };
    } else if (bootstrap !== null) {
      // The entry first: a crash before the identity is kept leaves a store with data, read as above.
      const { entries, hardState } = bootstrapState(bootstrap.voters);
      const [refused] = store.commit([{ kind: "persist", snapshot: null, entries, hardState }]);
      if (refused) throw refused;
      await store.sync();
      stored = { clusterId: bootstrap.clusterId, memberId: name, incarnation: newIncarnation(), peers: {} };
      log.info(
        { clusterId: bootstrap.clusterId, voters: bootstrap.voters, incarnation: stored.incarnation },
        "bootstrapped a new cluster",
      );
    } else {
      stored = {
        clusterId: null,
        memberId: incarnationOf(name, randomBytes(4).toString("hex")),
        incarnation: newIncarnation(),
        peers: {},
      };
      log.warn(
        { memberId: stored.memberId },
        "empty storage and no bootstrap asked: joining as a new member, to be added as a learner and promoted",
      );
    }
    write(file, stored);
    return new MemberIdentity(file, stored, log);
  }

  get memberId(): string {
    return this.stored.memberId;
  }

  current(): string | null {
    return this.stored.clusterId;
  }

  adopt(id: string): void {
    this.save({ ...this.stored, clusterId: id });
    this.log.info({ clusterId: id }, "learnt the cluster ID from a peer");
  }

  get own(): MemberIncarnation {
    return { memberId: this.stored.memberId, incarnation: this.stored.incarnation };
  }

  seen(memberId: string): string | undefined {
    return Object.hasOwn(this.stored.peers, memberId) ? this.stored.peers[memberId] : undefined;
  }

  record(memberId: string, incarnation: string): void {
    this.save({ ...this.stored, peers: { ...this.stored.peers, [memberId]: incarnation } });
    this.log.info({ peer: memberId, incarnation }, "recorded a peer's incarnation");
  }

  /**
   * Calls `listener` once, when a write of the identity fails: the voter must stop, since what it
   * accepted in memory would be forgotten by a restart (a peer that lost its storage accepted again).
   */
  onFailure(listener: (err: StorageFailedError) => void): void {
    this.failureListeners.push(listener);
  }

  /** Held only once durable; after a failed write every later one fails too (fail-stop). */
  private save(next: Stored): void {
    if (this.failure !== null) throw this.failure;
    try {
      write(this.file, next);
    } catch (cause) {
      this.failure = new StorageFailedError(`writing ${this.file}: ${String(cause)}`, { cause });
      for (const listener of this.failureListeners) listener(this.failure);
      throw this.failure;
    }
    this.stored = next;
  }
}

function newIncarnation(): string {
  return randomBytes(8).toString("hex");
}

/**
 * A bootstrap ID is ignored by a voter that holds an identity, but one that contradicts it is refused
 * rather than ignored: a data dir of another cluster, or a new member's (started once without the ID,
 * nothing received yet) that the operator meant to bootstrap. A store holding data from before
 * identities were kept learns its cluster from its peers.
 */
function checkBootstrapAgainst(
  stored: Stored,
  bootstrapId: string,
  dataDir: string,
  store: DurableLogStore,
): void {
  if (stored.clusterId === bootstrapId) return;
  if (stored.clusterId !== null) {
    throw new ConfigError(
      "KeyLoad:Cluster:BootstrapId",
      `is ${bootstrapId}, but ${dataDir} holds member ${stored.memberId} of cluster ${stored.clusterId}: ` +
        "check KeyLoad:Node:DataDir, or remove the bootstrap ID",
    );
  }
  if (isEmpty(store)) {
    throw new ConfigError(
      "KeyLoad:Cluster:BootstrapId",
      `is ${bootstrapId}, but ${dataDir} was made to join a cluster as new member ${stored.memberId} ` +
        "(it started once without a bootstrap ID): empty the data dir to bootstrap, or remove the ID to join",
    );
  }
}

function isEmpty(store: DurableLogStore): boolean {
  const { hardState } = store.initialState();
  return store.lastIndex() === 0 && store.snapshotIndex() === 0 && hardState.term === 0;
}

function read(file: string): Stored {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new InternalError(`${file} is not a member identity`, { reason: "CorruptState", cause: error });
  }
  const { clusterId, memberId, incarnation = "", peers = {} } = (parsed ?? {}) as Record<string, unknown>;
  if (
    (clusterId !== null && typeof clusterId !== "string") ||
    typeof memberId !== "string" ||
    typeof incarnation !== "string" ||
    !isIncarnationRecord(peers)
  )
    throw new InternalError(`${file} is not a member identity`, { reason: "CorruptState" });
  return { clusterId, memberId, incarnation, peers };
}

function isIncarnationRecord(value: unknown): value is Record<string, string> {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((v) => typeof v === "string" && v !== "")
  );
}

/** Replaces the file atomically and durably: a crash leaves the old identity or the new, whole. */
function write(file: string, stored: Stored): void {
  const temp = `${file}.tmp`;
  writeFileSync(temp, `${JSON.stringify(stored)}\n`, { mode: 0o600 });
  const fd = openSync(temp, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, file);
  const dir = openSync(dirname(file), "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}
