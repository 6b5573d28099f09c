import type { Entry, SnapshotMeta } from "../raft/types.js";
import { chainDigest, entryDigest } from "./digest.js";

/**
 * Registers make the snapshot a few chunks long at small `snapshotChunkBytes`, so InstallSnapshot
 * really is split and reassembled.
 */
const REGISTERS = 32;
const HEADER_BYTES = 16;
const SNAPSHOT_BYTES = HEADER_BYTES + REGISTERS * 4;
const COMMAND_BYTES = 9;

/** A client write: a unique id (so every proposal's digest differs), a register and a value. */
export function encodeCommand(id: number, register: number, value: number, padding: number): Uint8Array {
  const data = new Uint8Array(COMMAND_BYTES + padding);
  const view = new DataView(data.buffer);
  view.setUint32(0, id >>> 0);
  data[4] = register % REGISTERS;
  view.setUint32(5, value >>> 0);
  for (let i = 0; i < padding; i++) data[COMMAND_BYTES + i] = (id + i) & 0xff;
  return data;
}

/**
 * What one simulated node applied: the applied index, the digest chain over every applied entry and
 * the registers the commands wrote. What of it survives a crash is StateMachineStore's concern.
 */
export class SimStateMachine {
  private constructor(
    private appliedIndex: number,
    private appliedTerm: number,
    private chain: number,
    private writeCount: number,
    private readonly registers: Uint32Array,
  ) {}

  static empty(): SimStateMachine {
    return new SimStateMachine(0, 0, 0, 0, new Uint32Array(REGISTERS));
  }

  /** Rebuilds the state a snapshot captured; throws when the data is not a snapshot of this machine. */
  static restore(meta: SnapshotMeta, data: Uint8Array): SimStateMachine {
    if (meta.index === 0) return SimStateMachine.empty();
    if (data.byteLength !== SNAPSHOT_BYTES) {
      throw new Error(`snapshot at ${meta.index} holds ${data.byteLength} bytes, expected ${SNAPSHOT_BYTES}`);
    }
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const index = view.getUint32(0);
    if (index !== meta.index) {
      throw new Error(`snapshot meta says index ${meta.index} but its data was taken at ${index}`);
    }
    const registers = new Uint32Array(REGISTERS);
    for (let r = 0; r < REGISTERS; r++) registers[r] = view.getUint32(HEADER_BYTES + r * 4);
    return new SimStateMachine(index, view.getUint32(4), view.getUint32(8), view.getUint32(12), registers);
  }

  /** An independent copy, e.g. the image a crash may leave behind. */
  copy(): SimStateMachine {
    return new SimStateMachine(
      this.appliedIndex,
      this.appliedTerm,
      this.chain,
      this.writeCount,
      this.registers.slice(),
    );
  }

  get applied(): number {
    return this.appliedIndex;
  }

  get term(): number {
    return this.appliedTerm;
  }

  /** The chain digest of everything applied so far (see `chainDigest`). */
  get digest(): number {
    return this.chain;
  }

  /** Applies the next entry; the caller has checked that `entry.index` is `applied + 1`. */
  apply(entry: Entry, digest = entryDigest(entry)): void {
    this.chain = chainDigest(this.chain, entry.index, entry.term, digest);
    this.appliedIndex = entry.index;
    this.appliedTerm = entry.term;
    if (entry.type === "normal" && entry.data.byteLength >= COMMAND_BYTES) {
      const data = entry.data;
      const value = ((data[5]! << 24) | (data[6]! << 16) | (data[7]! << 8) | data[8]!) >>> 0;
      this.registers[data[4]! % REGISTERS] = value;
      this.writeCount++;
    }
  }

  serialize(): Uint8Array {
    const data = new Uint8Array(SNAPSHOT_BYTES);
    const view = new DataView(data.buffer);
    view.setUint32(0, this.appliedIndex);
    view.setUint32(4, this.appliedTerm);
    view.setUint32(8, this.chain);
    view.setUint32(12, this.writeCount);
    for (let r = 0; r < REGISTERS; r++) view.setUint32(HEADER_BYTES + r * 4, this.registers[r]!);
    return data;
  }
}
