import type { SimNode } from "./node-registry.js";
import type { LinkCut } from "./sim-network.js";

/** What a burst of faults makes worse while it lasts (see FaultInjector). */
export type BurstKind = "drop" | "duplicate" | "delay" | "disk";

/**
 * The timed events of a run, besides deliveries (the network orders those). Ticks, syncs and snapshot
 * copies carry the incarnation they were scheduled in, so those of a node's earlier life are skipped.
 */
export type SimEvent =
  | {
      readonly kind: "tick" | "sync" | "snapshot-copy" | "resume";
      readonly node: SimNode;
      readonly incarnation: number;
    }
  | { readonly kind: "restart" | "shutdown"; readonly node: SimNode }
  | { readonly kind: "client" | "fault" | "operator" }
  | { readonly kind: "heal"; readonly cuts: readonly LinkCut[]; readonly what: string }
  | { readonly kind: "burst-end"; readonly burst: BurstKind };
