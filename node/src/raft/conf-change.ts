import { RaftInvariantError } from "./errors.js";
import type { ConfState, NodeId } from "./types.js";

/**
 * One membership change, carried by a `conf` entry and applied when that entry is applied, one at a
 * time (the leader proposes no other until it is): a new node joins as a learner, a learner that has
 * caught up is promoted, and any member is removed. A voter is never added directly, so a node that
 * holds nothing never counts toward a quorum.
 */
export type ConfChange =
  | { readonly type: "add-learner"; readonly node: NodeId }
  | { readonly type: "promote"; readonly node: NodeId }
  | { readonly type: "remove"; readonly node: NodeId };

/**
 * The first entry of a new cluster's log (bootstrap.ts): its voters, written identically by each of
 * them, so the configuration is in the log and reaches a node that joins later like any other change.
 */
export interface BootstrapConf {
  readonly type: "bootstrap";
  readonly voters: readonly NodeId[];
}

/** What a `conf` entry holds. */
export type ConfEntry = ConfChange | BootstrapConf;

const CHANGE_TYPES: ReadonlySet<string> = new Set<ConfChange["type"]>(["add-learner", "promote", "remove"]);

/** Why a change cannot apply to a configuration, or null when it can. */
export function confChangeProblem(conf: ConfState, change: ConfEntry): string | null {
  if (change.type === "bootstrap") {
    if (conf.voters.length > 0 || (conf.learners ?? []).length > 0)
      return "the cluster is already bootstrapped";
    return change.voters.length > 0 && new Set(change.voters).size === change.voters.length
      ? null
      : "a bootstrap needs distinct voters";
  }
  const learners = conf.learners ?? [];
  const isVoter = conf.voters.includes(change.node);
  const isLearner = learners.includes(change.node);
  switch (change.type) {
    case "add-learner":
      return isVoter || isLearner ? `${change.node} is already a member` : null;
    case "promote":
      return isLearner ? null : `${change.node} is not a learner`;
    case "remove":
      if (!isVoter && !isLearner) return `${change.node} is not a member`;
      return isVoter && conf.voters.length === 1 ? `${change.node} is the last voter` : null;
  }
}

/** The configuration after `change`; a change that cannot apply leaves it as it is. */
export function applyConfChange(conf: ConfState, change: ConfEntry): ConfState {
  if (confChangeProblem(conf, change) !== null) return conf;
  if (change.type === "bootstrap") return { voters: [...change.voters], learners: [] };
  const voters = conf.voters.filter((id) => id !== change.node);
  const learners = (conf.learners ?? []).filter((id) => id !== change.node);
  if (change.type === "add-learner") learners.push(change.node);
  if (change.type === "promote") voters.push(change.node);
  return { voters, learners };
}

export function encodeConfChange(change: ConfEntry): Uint8Array {
  const fields = change.type === "bootstrap" ? { type: change.type, voters: change.voters } : change;
  return new TextEncoder().encode(JSON.stringify(fields));
}

/** Reads a `conf` entry's data. The log holds only what a leader encoded, so anything else is a fault. */
export function decodeConfChange(data: Uint8Array): ConfEntry {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(data));
  } catch {
    parsed = null;
  }
  if (isConfEntry(parsed)) return parsed;
  throw new RaftInvariantError("a conf entry does not hold a membership change");
}

function isConfEntry(value: unknown): value is ConfEntry {
  if (typeof value !== "object" || value === null) return false;
  const { type, node, voters } = value as Record<string, unknown>;
  if (type === "bootstrap")
    return Array.isArray(voters) && voters.every((v) => typeof v === "string" && v.length > 0);
  return typeof type === "string" && CHANGE_TYPES.has(type) && typeof node === "string" && node.length > 0;
}
