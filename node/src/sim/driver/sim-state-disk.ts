import type { SeededRandom } from "../../raft/seeded-random.js";
import { SimStateMachine } from "../sim-state-machine.js";

/**
 * What of one node's state machine outlives its crashes, as the state database keeps it: applies are
 * committed in groups without an fsync, and an fsync (a snapshot point's, a copy's, an install's)
 * makes the state durable as of when it was asked for. A crash, of the process or of the machine,
 * may so lose any number of the batches applied since the last fsync, never part of one.
 */
export class SimStateDisk {
  /** The durable image first, then the state after each batch applied since. */
  private images: SimStateMachine[] = [SimStateMachine.empty()];

  constructor(private readonly random: SeededRandom) {}

  /** The state a process starts from: the latest image. */
  latest(): SimStateMachine {
    return this.images[this.images.length - 1]!.copy();
  }

  /** A batch was applied: `sm` as it now is. */
  applied(sm: SimStateMachine): void {
    this.images.push(sm.copy());
  }

  /** An fsync completed that covered every batch up to `index`. */
  syncedTo(index: number): void {
    let k = this.images.length - 1;
    while (k > 0 && this.images[k]!.applied > index) k--;
    this.images = this.images.slice(k);
  }

  /** The whole state was replaced by `sm` (a snapshot installed), durably. */
  replaced(sm: SimStateMachine): void {
    this.images = [sm.copy()];
  }

  /** A crash: any number of the latest batches is gone. Returns how many. */
  crash(): number {
    const kept = this.random.nextInt(this.images.length);
    const lost = this.images.length - 1 - kept;
    this.images = this.images.slice(0, kept + 1);
    return lost;
  }
}
