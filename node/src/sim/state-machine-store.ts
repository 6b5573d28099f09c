import type { SeededRandom } from "../raft/seeded-random.js";
import { SimStateMachine } from "./sim-state-machine.js";

/**
 * What of a node's state machine outlives a crash, as production keeps it (state/database.ts): each
 * apply batch commits without an fsync, so a power loss drops any number of the latest batches, back
 * to the last fsync, which a snapshot taken or installed makes. Nothing is torn within a batch. The
 * state machine may so come back ahead of the commit index its log kept (see raiseCommitToApplied)
 * or behind it (the core hands the rest out again).
 */
export class StateMachineStore {
  /** The state machine the node applies to. */
  private current: SimStateMachine = SimStateMachine.empty();
  /** The durable state first, then the state after each batch committed since. */
  private images: SimStateMachine[] = [SimStateMachine.empty()];

  constructor(private readonly random: SeededRandom) {}

  get live(): SimStateMachine {
    return this.current;
  }

  /** How many committed batches a crash could drop. */
  get unsynced(): number {
    return this.images.length - 1;
  }

  /** The live state machine committed one more batch. */
  committed(): void {
    this.images.push(this.current.copy());
  }

  /** `sm` is the live state machine now, and durable, as after a snapshot is taken or installed. */
  synced(sm: SimStateMachine): void {
    this.current = sm;
    this.images = [sm.copy()];
  }

  /** Power loss: any number of the latest batches is gone. Returns how many. */
  crash(): number {
    const kept = this.random.nextInt(this.images.length);
    const lost = this.images.length - 1 - kept;
    const image = this.images[kept]!;
    this.images = [image];
    this.current = image.copy();
    return lost;
  }
}
