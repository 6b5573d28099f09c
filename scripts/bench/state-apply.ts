/**
 * State machine apply rate: 1 KiB catalog puts (each a new key: a JSON document with text fields, its
 * change-feed entry and its command outcome) applied to a file-backed state database in batches, as a
 * voter applies the committed entries of one Raft Ready. It runs twice: for a tenant that has searched,
 * whose documents the full-text index follows on the search worker's thread (the run also reports when
 * the index had caught up), and for one that never searched, which skips indexing until its first
 * search builds its part of the index (the run reports how long that took). Entries are encoded before
 * the clock starts: encoding is the leader's work at proposal time, not the apply's.
 *
 *   pnpm --filter @keyload/scripts bench:state [--entries N] [--batch B] [--size BYTES]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type Entry, SeededRandom } from "@keyload/node/raft";
import { ApiKeyHasher, encodeCommand, StateMachine } from "@keyload/node/state";
import { scriptArgs } from "./script-args.js";

export interface StateApplyBenchResult {
  entries: number;
  batch: number;
  payloadBytes: number;
  wallSeconds: number;
  cpuSeconds: number;
  putsPerSecond: number;
  /** Whether the tenant had searched before the puts, so that the index followed them. */
  searched: boolean;
  /**
   * From the first put until a search answered from an index holding every put: for a tenant that had
   * searched, indexing beside the apply on the worker's thread; otherwise, the first search's build.
   */
  indexedSeconds: number;
}

const TARGET = 30_000;

const WORDS = (
  "order invoice customer shipment warehouse account payment refund region supplier product catalog " +
  "priority pending active archived delivery express standard return label carrier tracking address " +
  "billing discount coupon inventory restock backorder quantity price currency tax total subtotal " +
  "note comment review rating feedback support ticket escalation resolved opened closed assigned team"
).split(" ");

/** A JSON body `{"value":{...}}` of `bytes` bytes (ASCII), with words a full-text index would see. */
function putBody(random: SeededRandom, i: number, bytes: number): string {
  const value = { id: i, name: `customer ${i}`, status: "active", score: random.nextInt(1000), notes: "" };
  const room = bytes - JSON.stringify({ value }).length;
  let notes = "";
  while (notes.length < room)
    notes += `${notes.length === 0 ? "" : " "}${WORDS[random.nextInt(WORDS.length)]!}`;
  value.notes = notes.slice(0, Math.max(0, room));
  return JSON.stringify({ value });
}

export async function runStateApplyBench(
  entries: number,
  batch: number,
  payloadBytes: number,
  searched: boolean,
): Promise<StateApplyBenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "keyload-bench-state-"));
  const sm = StateMachine.open({
    path: join(dir, "state.db"),
    keyHasher: new ApiKeyHasher("a bench cluster secret"),
  });
  try {
    const random = new SeededRandom(42);
    const log: Entry[] = [];
    for (let i = 1; i <= entries; i++) {
      const data = encodeCommand({
        commandId: `put-${i}`,
        kind: "catalog.put",
        tenant: "bench",
        principal: "writer",
        timestampMs: 1_700_000_000_000 + i,
        monotonicMs: i,
        params: { key: `customers/${String(i).padStart(9, "0")}` },
        payload: putBody(random, i, payloadBytes),
      });
      log.push({ index: i, term: 1, type: "normal", data });
    }
    const search = { query: "customer", prefix: "", limit: 1, after: undefined };
    if (searched) await sm.search("bench", search);
    const cpu0 = process.cpuUsage();
    const wall0 = process.hrtime.bigint();
    for (let start = 0; start < log.length; start += batch) {
      for (const result of sm.applyBatch(log.slice(start, start + batch))) {
        if (result.type !== "command" || result.outcome.status !== "committed") {
          throw new Error(`entry ${result.entryIndex} did not commit`);
        }
      }
    }
    const wallSeconds = Number(process.hrtime.bigint() - wall0) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    // A search is answered after every change sent before it, so it returns once indexing caught up.
    const { hits } = JSON.parse((await sm.search("bench", search)).text) as { hits: unknown[] };
    if (hits.length === 0) throw new Error("the search index holds none of the puts");
    const indexedSeconds = Number(process.hrtime.bigint() - wall0) / 1e9;
    return {
      entries,
      batch,
      payloadBytes,
      wallSeconds,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      putsPerSecond: entries / wallSeconds,
      searched,
      indexedSeconds,
    };
  } finally {
    await sm.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function formatStateApplyBench(r: StateApplyBenchResult): string {
  const index = r.searched
    ? `search index caught up ${r.indexedSeconds.toFixed(2)} s after the first put`
    : `the first search, building the index, answered ${r.indexedSeconds.toFixed(2)} s after the first put`;
  return [
    `state-apply: ${r.entries} catalog puts of ${r.payloadBytes} B in batches of ${r.batch}, for a tenant that ${r.searched ? "has searched (the index follows)" : "never searched (no indexing)"}`,
    `  wall ${r.wallSeconds.toFixed(2)} s, process CPU ${r.cpuSeconds.toFixed(2)} s (both threads); ${index}`,
    `  applied puts per second: ${Math.round(r.putsPerSecond)} (target >= ${TARGET}, ratio ${(r.putsPerSecond / TARGET).toFixed(2)})`,
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    args: scriptArgs(),
    options: {
      entries: { type: "string", default: "200000" },
      batch: { type: "string", default: "64" },
      size: { type: "string", default: "1024" },
    },
  });
  // A short warm-up lets the JIT settle before the measured runs.
  await runStateApplyBench(20_000, Number(values.batch), Number(values.size), true);
  for (const searched of [true, false]) {
    console.log(
      formatStateApplyBench(
        await runStateApplyBench(Number(values.entries), Number(values.batch), Number(values.size), searched),
      ),
    );
  }
}
