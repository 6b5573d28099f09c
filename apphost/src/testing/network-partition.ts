import { execFileSync } from "node:child_process";
import { execa } from "execa";
import { VOTER_NAMES, type VoterName } from "../app-model.js";
import { PartitionFailedError, PartitionUnavailableError } from "../apphost-errors.js";
import { isAlive, recordOf } from "../process-table.js";

/**
 * Network partitions between the voters of one test cluster, with iptables on loopback. All voters
 * share 127.0.0.1, and a voter dials its peers from ephemeral ports, so an address or a source port
 * cannot tell whose packet it is. Each voter therefore runs with a group id of its own (only possible
 * as root), and a voter sends its Raft messages and forwarded commands on the connection it dials to
 * the peer's port (peer-transport.ts). Dropping, in OUTPUT, the packets of voter A's group to voter B's
 * peer port silences A towards B (a one-way cut); doing so for every pair across groups, both ways,
 * cuts the groups apart. The rules live in a chain of their own, which `heal` removes entirely.
 *
 * A rule matches a voter's packets only while the voter runs: once it is killed, the kernel still sends
 * what its sockets had queued, from sockets no process owns, and those packets pass every rule.
 */
export interface PartitionedVoter {
  readonly name: VoterName;
  readonly peerPort: number;
  readonly gid: number;
}

/** A one-way link: what the first voter sends the second. */
export type VoterLink = readonly [from: VoterName, to: VoterName];

const CHAIN_PREFIX = "KLAH-";
let chains = 0;

async function iptables(args: readonly string[]): Promise<{ ok: boolean; output: string }> {
  const result = await execa("iptables", ["-w", ...args], { reject: false, stdin: "ignore" });
  return { ok: result.exitCode === 0, output: `${result.stdout}\n${result.stderr}`.trim() };
}

async function mustIptables(args: readonly string[]): Promise<void> {
  const result = await iptables(args);
  if (!result.ok) throw new PartitionFailedError(`iptables ${args.join(" ")} failed: ${result.output}`);
}

/** Why partitions cannot be made here, or undefined when they can. */
export async function partitionUnavailableReason(): Promise<string | undefined> {
  if (process.getuid?.() !== 0)
    return "partition needs root, to set iptables rules and each voter's group id";
  const probe = await execa("iptables", ["-w", "-L", "OUTPUT", "-n"], { reject: false, stdin: "ignore" });
  if (probe.exitCode === 0) return undefined;
  if ((probe as { code?: string }).code === "ENOENT") {
    return "partition needs iptables, which is not installed (apt-get install -y iptables)";
  }
  return `partition needs a working iptables, but \`iptables -L\` failed: ${probe.stderr || probe.shortMessage}`;
}

/**
 * Why a test that needs partitions skips here, or undefined when it can run. Where
 * `KEYLOAD_REQUIRE_PARTITIONS=1` (CI, as root) a missing capability throws instead: there a skipped
 * partition test would hide a broken setup.
 */
export async function partitionsUnavailable(): Promise<string | undefined> {
  const reason = await partitionUnavailableReason();
  if (reason !== undefined && process.env.KEYLOAD_REQUIRE_PARTITIONS === "1") {
    throw new PartitionUnavailableError(`KEYLOAD_REQUIRE_PARTITIONS=1, but ${reason}`);
  }
  return reason;
}

/** Removes chains left by test processes that died before they could heal. */
async function removeAbandonedChains(): Promise<void> {
  const listing = await iptables(["-S", "OUTPUT"]);
  for (const match of listing.output.matchAll(/-j (KLAH-(\d+)-\d+)/g)) {
    const [, chain, pid] = match;
    if (chain && !isAlive(recordOf(Number(pid)))) await removeChain(chain);
  }
}

/** The iptables commands that remove a chain; each may find nothing to do (a chain half set up). */
function removalSteps(chain: string): string[][] {
  return [
    ["-D", "OUTPUT", "-j", chain],
    ["-F", chain],
    ["-X", chain],
  ];
}

async function removeChain(chain: string): Promise<void> {
  for (const step of removalSteps(chain)) await iptables(step);
}

/**
 * The links that separate `groups`, e.g. `[["voter1"], ["voter2", "voter3"]]`: both ways between every
 * two voters in different groups. A voter named in no group is alone.
 */
export function linksBetween(groups: readonly (readonly VoterName[])[]): VoterLink[] {
  const groupOf = new Map<VoterName, number>();
  groups.forEach((group, index) => {
    for (const name of group) {
      if (groupOf.has(name)) throw new PartitionFailedError(`${name} is in more than one group`);
      groupOf.set(name, index);
    }
  });
  VOTER_NAMES.forEach((name, i) => {
    if (!groupOf.has(name)) groupOf.set(name, groups.length + i);
  });
  return VOTER_NAMES.flatMap((from) =>
    VOTER_NAMES.filter((to) => groupOf.get(from) !== groupOf.get(to)).map((to): VoterLink => [from, to]),
  );
}

export class NetworkPartition {
  private chain: string | undefined;

  /**
   * `chain` names the rules' chain when they must outlive this process (a CLI cluster's, healed by a
   * later command); by default the chain is this process's, and removed by any later partition once
   * this process is gone.
   */
  constructor(private readonly ownChain?: string) {}

  /**
   * Drops the peer traffic of each link, one way: `[from, to]` silences `from` towards `to` while `to`
   * still reaches `from`. Replaces whatever this partition dropped before.
   */
  async apply(links: readonly VoterLink[], voters: readonly PartitionedVoter[]): Promise<void> {
    const reason = await partitionUnavailableReason();
    if (reason) throw new PartitionUnavailableError(reason);
    const byName = new Map(voters.map((v) => [v.name, v]));
    const drops = new Map<string, { from: PartitionedVoter; to: PartitionedVoter }>();
    for (const [fromName, toName] of links) {
      const from = byName.get(fromName);
      const to = byName.get(toName);
      if (from === undefined || to === undefined || from === to) {
        throw new PartitionFailedError(`${fromName} -> ${toName} is not a link between two voters`);
      }
      drops.set(`${fromName}>${toName}`, { from, to });
    }

    await this.heal();
    await removeAbandonedChains();
    const chain = this.ownChain ?? `${CHAIN_PREFIX}${process.pid}-${++chains}`;
    this.chain = chain;
    await mustIptables(["-N", chain]);
    for (const { from, to } of drops.values()) {
      await mustIptables([
        "-A",
        chain,
        "-o",
        "lo",
        "-p",
        "tcp",
        "-m",
        "owner",
        "--gid-owner",
        String(from.gid),
        "--dport",
        String(to.peerPort),
        "-j",
        "DROP",
      ]);
    }
    await mustIptables(["-I", "OUTPUT", "-j", chain]);
  }

  /** Removes every rule this partition added; safe to call at any time. */
  async heal(): Promise<void> {
    const chain = this.chain ?? this.ownChain;
    if (chain === undefined) return;
    this.chain = undefined;
    await removeChain(chain);
  }

  /** `heal`, synchronously, for a process that is exiting. */
  healNow(): void {
    const chain = this.chain ?? this.ownChain;
    if (chain === undefined) return;
    this.chain = undefined;
    for (const step of removalSteps(chain)) {
      try {
        execFileSync("iptables", ["-w", ...step], { stdio: "ignore" });
      } catch {
        // Nothing of that step was left to remove.
      }
    }
  }
}
