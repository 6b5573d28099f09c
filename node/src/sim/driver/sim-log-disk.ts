import type { ConfState } from "../../raft/types.js";
import type { StoreOp } from "../../storage/durable-log-store.js";
import type { DurableLog } from "../durable-quorum.js";
import { LogImage } from "./log-image.js";

/** Where the simulated snapshot files live: a path names no real file. */
const SNAPSHOT_DIR = "sim:/snapshots/";

/** The virtual path of the snapshot file or temporary file `name`. */
export function simSnapshotPath(name: string): string {
  return SNAPSHOT_DIR + name;
}

/** A committed write not yet made durable by a sync. */
type UnsyncedWrite =
  | { readonly kind: "ops"; readonly ops: readonly StoreOp[] }
  | { readonly kind: "compact"; readonly index: number };

/** What a missing file throws, as node:fs does (its `code` is ENOENT). */
export class SimFileMissingError extends Error {
  readonly code = "ENOENT";
  constructor(path: string) {
    super(`ENOENT: no such file, ${path}`);
    this.name = new.target.name;
  }
}

/**
 * One simulated node's disk for its Raft log, which outlives the node's process: the durable image
 * (state row and entries), the writes committed since the last sync (in the page cache: a power loss
 * drops them, a killed process leaves them to reach the disk), and the snapshot files. A sealed file is
 * durable from its sealing on (the real store fsyncs it and its directory before naming it); a
 * temporary one is lost at any crash, as the next open deletes it.
 *
 * A `SimLogStore` opens it, one per process life; a crash or a close ends that life, and the objects of
 * an ended life refuse to be used (`checkLife`), as a dead process does nothing.
 */
export class SimLogDisk {
  private durable: LogImage;
  private unsynced: UnsyncedWrite[] = [];
  /** Writes ever committed, so a sync names the ones it covers. */
  private committed = 0;
  private syncedTo = 0;
  private readonly sealed = new Map<string, Uint8Array>();
  private readonly temps = new Map<string, Uint8Array[]>();
  /** Names are never reused, across process lives too, as the real store's random ones. */
  private nameCounter = 0;
  private life = 0;
  private open = false;

  /** A new disk holds no configuration (no voters) until a bootstrap or the leader's log gives it one. */
  constructor(conf: ConfState = { voters: [] }) {
    this.durable = new LogImage(conf);
  }

  // --- Process lives --------------------------------------------------------------------------

  /**
   * Starts a process life: the durable image as the new store sees it, after deleting every file the
   * log does not refer to (as `removeAllBut` at the real open). Returns the life's number.
   */
  openLife(): { life: number; image: LogImage } {
    if (this.open) throw new Error("sim log disk: a store is already open on this disk");
    this.open = true;
    this.life++;
    this.temps.clear();
    const keep = this.durable.snapshot.file;
    for (const name of [...this.sealed.keys()]) if (name !== keep) this.sealed.delete(name);
    return { life: this.life, image: this.durable.clone() };
  }

  /** Throws unless `life` is the current one: the objects of a crashed or closed process are dead. */
  checkLife(life: number): void {
    if (life !== this.life || !this.open) {
      throw new Error(`sim log disk: an object of process life ${life} was used after it ended`);
    }
  }

  isLive(life: number): boolean {
    return life === this.life && this.open;
  }

  /** A clean close: whatever the process committed was synced by its store first (see SimLogStore.close). */
  closeLife(life: number): void {
    this.checkLife(life);
    // Only a failed store leaves writes unsynced at its close: nothing vouches for them, they are lost.
    this.unsynced = [];
    this.syncedTo = this.committed;
    this.open = false;
  }

  /**
   * The process dies: with the power (`keepUnsynced` false) every committed but unsynced write is
   * lost; killed with the machine up (true), they reach the disk all the same. Temporary files go
   * either way. Returns how many writes were lost.
   */
  crash(keepUnsynced: boolean): number {
    const lost = keepUnsynced ? 0 : this.unsynced.length;
    if (keepUnsynced) this.syncTo(this.committed);
    this.unsynced = [];
    this.syncedTo = this.committed;
    this.temps.clear();
    this.open = false;
    // Ends the life even when no store was open, so no stray object of it survives.
    this.life++;
    return lost;
  }

  // --- The log --------------------------------------------------------------------------------

  /** Records the ops a commit accepted (already checked); returns the write's number for `syncTo`. */
  commitOps(life: number, ops: readonly StoreOp[]): number {
    this.checkLife(life);
    this.unsynced.push({ kind: "ops", ops });
    return ++this.committed;
  }

  commitCompaction(life: number, index: number): number {
    this.checkLife(life);
    this.unsynced.push({ kind: "compact", index });
    return ++this.committed;
  }

  /** Writes committed so far: what a sync starting now covers. */
  get committedWrites(): number {
    return this.committed;
  }

  /** Writes not yet durable. */
  get unsyncedWrites(): number {
    return this.unsynced.length;
  }

  /** An fsync completed: writes up to number `to` are durable. */
  syncTo(to: number): void {
    while (this.syncedTo < to && this.unsynced.length > 0) {
      const w = this.unsynced.shift()!;
      if (w.kind === "ops") for (const op of w.ops) this.durable.apply(op);
      else if (w.index > this.durable.startIndex) this.durable.compact(w.index);
      this.syncedTo++;
    }
  }

  /** What is durable now, to read (not to change): what an acknowledgement may vouch for. */
  get durableLog(): Readonly<Pick<LogImage, "hardState" | "lastIndex">> {
    return this.durable;
  }

  /** What is durable, as the check that a leader commits only what a majority holds reads it. */
  readonly durableQuorumView: DurableLog = {
    snapshotMeta: () => this.durable.snapshot.meta,
    lastIndex: () => this.durable.lastIndex,
    term: (index) => this.durable.term(index),
  };

  /** A copy of the durable image, for tests and checks. */
  durableImage(): LogImage {
    return this.durable.clone();
  }

  // --- Snapshot files -------------------------------------------------------------------------

  /** A fresh temporary path. */
  newTempPath(): string {
    return simSnapshotPath(`tmp-${String(++this.nameCounter).padStart(8, "0")}.part`);
  }

  /** A name no file ever had, for a sealed snapshot at (index, term). */
  newSnapshotName(index: number, term: number): string {
    const tag = (++this.nameCounter).toString(16).padStart(8, "0");
    return `snap-${String(index).padStart(20, "0")}-${term}-${tag}.sqlite`;
  }

  /** Writes a whole temporary file, as a state machine copies itself into one. */
  writeTemp(path: string, bytes: Uint8Array): void {
    this.temps.set(path, [bytes.slice()]);
  }

  /** Appends to a temporary file, creating it when new. */
  appendTemp(path: string, bytes: Uint8Array): void {
    const chunks = this.temps.get(path);
    if (chunks === undefined) this.temps.set(path, [bytes.slice()]);
    else chunks.push(bytes.slice());
  }

  hasTemp(path: string): boolean {
    return this.temps.has(path);
  }

  removeTemp(path: string): void {
    this.temps.delete(path);
  }

  /** Renames a temporary file to the sealed `name`, durable from now on. */
  seal(path: string, name: string): Uint8Array {
    const bytes = this.readFile(path);
    this.temps.delete(path);
    this.sealed.set(name, bytes);
    return bytes;
  }

  /** The bytes at `path` (a sealed snapshot's or a temporary file's); throws SimFileMissingError. */
  readFile(path: string): Uint8Array {
    const chunks = this.temps.get(path);
    if (chunks !== undefined) return concat(chunks);
    const sealed = path.startsWith(SNAPSHOT_DIR)
      ? this.sealed.get(path.slice(SNAPSHOT_DIR.length))
      : undefined;
    if (sealed === undefined) throw new SimFileMissingError(path);
    return sealed;
  }

  /** The sealed file `name`, or undefined. */
  sealedFile(name: string): Uint8Array | undefined {
    return this.sealed.get(name);
  }

  removeSealed(name: string): void {
    this.sealed.delete(name);
  }

  /** Replaces a sealed file's bytes: fault injection (a damaged or truncated snapshot file). */
  damageSealed(name: string, bytes: Uint8Array): void {
    if (!this.sealed.has(name)) throw new SimFileMissingError(simSnapshotPath(name));
    this.sealed.set(name, bytes);
  }

  /** The names of the sealed files and the paths of the temporary ones, sorted. */
  listFiles(): { sealed: string[]; temps: string[] } {
    return { sealed: [...this.sealed.keys()].sort(), temps: [...this.temps.keys()].sort() };
  }
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  let size = 0;
  for (const c of chunks) size += c.byteLength;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
