/**
 * Raft core throughput: three cores in one thread over an instant network and disk (MemoryStorage),
 * 1 KiB entries proposed in batches. Prints committed entries per CPU second, counting the CPU of all
 * three cores, and the same per wall second.
 *
 *   pnpm --filter @keyload/scripts bench:raft [--entries N] [--batch B] [--size BYTES]
 */
import { parseArgs } from "node:util";
import { MemoryStorage, type Message, RaftNode, SeededRandom } from "@keyload/node/raft";
import { scriptArgs } from "./script-args.js";

export interface RaftBenchResult {
  entries: number;
  batch: number;
  entryBytes: number;
  cpuSeconds: number;
  wallSeconds: number;
  entriesPerCpuSecond: number;
  entriesPerWallSecond: number;
}

export function runRaftBench(entries: number, batch: number, entryBytes: number): RaftBenchResult {
  const ids = ["n1", "n2", "n3"];
  const nodes = new Map<string, { raft: RaftNode; storage: MemoryStorage }>();
  ids.forEach((id, i) => {
    const storage = new MemoryStorage({ voters: ids });
    const raft = new RaftNode({ id, storage, random: new SeededRandom(i + 1) });
    nodes.set(id, { raft, storage });
  });
  let inFlight: Message[] = [];
  const pump = (): void => {
    for (;;) {
      for (const { raft, storage } of nodes.values()) {
        while (raft.hasReady()) {
          const rd = raft.ready();
          // Nothing is compacted here, so no follower ever needs a snapshot.
          if (rd.snapshot) throw new Error("unexpected snapshot in the Raft core bench");
          storage.append(rd.entries);
          if (rd.hardState) storage.setHardState(rd.hardState);
          for (const m of rd.messages) inFlight.push(m);
          raft.advance();
        }
      }
      if (inFlight.length === 0) return;
      const batchOfMessages = inFlight;
      inFlight = [];
      for (const m of batchOfMessages) nodes.get(m.to)!.raft.step(m);
    }
  };
  const leader = nodes.get("n1")!.raft;
  leader.campaign();
  pump();
  if (leader.status().role !== "leader") throw new Error("n1 did not become leader");

  const payload = new Uint8Array(entryBytes).fill(7);
  const proposals: Uint8Array[] = new Array(batch).fill(payload);
  const start = leader.status().commit;
  const target = start + entries;
  const cpu0 = process.cpuUsage();
  const wall0 = process.hrtime.bigint();
  while (leader.status().commit < target) {
    leader.proposeBatch(proposals);
    pump();
    // Keeps memory flat over long runs, as a real driver compacts behind its snapshots.
    for (const { raft, storage } of nodes.values()) {
      const applied = raft.status().applied;
      if (applied - storage.firstIndex() > 100_000) {
        storage.createSnapshot(applied, { voters: ids }, new Uint8Array(0));
        storage.compact(applied);
      }
    }
  }
  const cpu = process.cpuUsage(cpu0);
  const wallSeconds = Number(process.hrtime.bigint() - wall0) / 1e9;
  const committed = leader.status().commit - start;
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return {
    entries: committed,
    batch,
    entryBytes,
    cpuSeconds,
    wallSeconds,
    entriesPerCpuSecond: committed / cpuSeconds,
    entriesPerWallSecond: committed / wallSeconds,
  };
}

export function formatRaftBench(r: RaftBenchResult): string {
  return [
    `raft-core: ${r.entries} entries of ${r.entryBytes} B in batches of ${r.batch}`,
    `  CPU ${r.cpuSeconds.toFixed(2)} s, wall ${r.wallSeconds.toFixed(2)} s`,
    `  committed entries per CPU second: ${Math.round(r.entriesPerCpuSecond)} (target >= 200000, ratio ${(r.entriesPerCpuSecond / 200_000).toFixed(2)})`,
    `  committed entries per wall second: ${Math.round(r.entriesPerWallSecond)}`,
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    args: scriptArgs(),
    options: {
      entries: { type: "string", default: "1000000" },
      batch: { type: "string", default: "64" },
      size: { type: "string", default: "1024" },
    },
  });
  // A short warm-up lets the JIT settle before the measured run.
  runRaftBench(50_000, Number(values.batch), Number(values.size));
  console.log(
    formatRaftBench(runRaftBench(Number(values.entries), Number(values.batch), Number(values.size))),
  );
}
