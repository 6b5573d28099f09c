import type { Entry, Message, Ready } from "../raft/types.js";

export type TraceKind =
  | "tick"
  | "deliver"
  | "drop"
  | "ready"
  | "sync"
  | "apply"
  | "client"
  | "member"
  | "fault"
  | "role"
  | "phase";

/**
 * One traced event. Messages and Readys are immutable once the core hands them out, so the record
 * keeps a reference and formats it only when someone reads the trace: tracing every step stays cheap.
 */
interface TraceRecord {
  readonly step: number;
  readonly time: number;
  readonly node: string;
  readonly kind: TraceKind;
  readonly message: Message | null;
  readonly ready: Ready | null;
  readonly text: string;
}

/** The last `capacity` events of a run (all of them when `capacity` is `Infinity`). */
export class Trace {
  private readonly records: TraceRecord[] = [];
  private start = 0;
  private total = 0;

  constructor(private readonly capacity: number) {}

  get recorded(): number {
    return this.total;
  }

  add(
    step: number,
    time: number,
    node: string,
    kind: TraceKind,
    text = "",
    message: Message | null = null,
    ready: Ready | null = null,
  ): void {
    const record: TraceRecord = { step, time, node, kind, message, ready, text };
    this.total++;
    if (this.records.length < this.capacity) {
      this.records.push(record);
      return;
    }
    this.records[this.start] = record;
    this.start = (this.start + 1) % this.records.length;
  }

  lines(): string[] {
    const out: string[] = [];
    const n = this.records.length;
    for (let i = 0; i < n; i++) out.push(formatRecord(this.records[(this.start + i) % n]!));
    return out;
  }

  format(): string {
    const shown = this.records.length;
    const header = shown < this.total ? `(last ${shown} of ${this.total} events)\n` : "";
    return header + this.lines().join("\n");
  }
}

function formatRecord(r: TraceRecord): string {
  let body: string = r.kind;
  if (r.message !== null) body += ` ${formatMessage(r.message)}`;
  if (r.ready !== null) body += ` ${formatReady(r.ready)}`;
  if (r.text !== "") body += ` ${r.text}`;
  return `${String(r.time).padStart(6)} #${String(r.step).padEnd(5)} ${r.node.padEnd(3)} ${body}`;
}

export function formatMessage(m: Message): string {
  const head = `${m.type} ${m.from}->${m.to} t${m.term}`;
  switch (m.type) {
    case "append":
      return `${head} prev=${m.index}/${m.logTerm} ents=${formatEntries(m.entries)} commit=${m.commit} e${m.epoch}`;
    case "append-response":
      return m.reject
        ? `${head} REJECT idx=${m.index} hint=${m.rejectHint}/${m.logTerm} e${m.epoch}`
        : `${head} ok idx=${m.index} e${m.epoch}`;
    case "vote":
    case "pre-vote":
      return `${head} last=${m.index}/${m.logTerm}${m.transfer ? " transfer" : ""}`;
    case "vote-response":
    case "pre-vote-response":
      return `${head} ${m.reject ? "REJECT" : "granted"}`;
    case "heartbeat":
      return `${head} commit=${m.commit} round=${m.readRound}`;
    case "heartbeat-response":
      return `${head} round=${m.readRound}`;
    case "snapshot-chunk":
      return `${head} snap=${m.meta.index}/${m.meta.term} bytes=${m.offset}+${m.length}/${m.totalBytes} e${m.epoch}`;
    case "snapshot-chunk-response":
      return `${head} snap=${m.snapshotIndex}/${m.snapshotTerm} next=${m.nextOffset}${m.reject ? " REJECT" : ""}`;
    case "read-index":
      return `${head} req=${m.requestId}`;
    case "read-index-response":
      return `${head} req=${m.requestId} idx=${m.index}${m.reject ? " REJECT" : ""}`;
    case "timeout-now":
      return head;
  }
}

export function formatReady(rd: Ready): string {
  const parts: string[] = [];
  if (rd.softState !== null)
    parts.push(`soft=${rd.softState.role}/t${rd.softState.term}/L=${rd.softState.leader ?? "-"}`);
  if (rd.hardState !== null) {
    const hs = rd.hardState;
    parts.push(`hs=t${hs.term}/v=${hs.vote ?? "-"}/c${hs.commit}`);
  }
  if (rd.snapshot !== null) parts.push(`snap=${rd.snapshot.meta.index}/${rd.snapshot.meta.term}`);
  if (rd.entries.length > 0) parts.push(`ents=${formatEntries(rd.entries)}`);
  if (rd.committedEntries.length > 0) parts.push(`apply=${formatEntries(rd.committedEntries)}`);
  if (rd.messages.length > 0) parts.push(`msgs=[${rd.messages.map((m) => `${m.type}->${m.to}`).join(",")}]`);
  if (rd.readStates.length > 0)
    parts.push(`reads=[${rd.readStates.map((s) => `${s.requestId}@${s.index}`).join(",")}]`);
  if (rd.readFailures.length > 0) {
    parts.push(`readFails=[${rd.readFailures.map((f) => `${f.requestId}:${f.reason}`).join(",")}]`);
  }
  return parts.join(" ");
}

/** `[]`, `5/t3`, or `5..8/t3..t4`: the index span and the terms at its ends. */
function formatEntries(entries: readonly Entry[]): string {
  const first = entries[0];
  const last = entries[entries.length - 1];
  if (first === undefined || last === undefined) return "[]";
  if (first === last) return `${first.index}/t${first.term}${first.type === "noop" ? "(noop)" : ""}`;
  const terms = first.term === last.term ? `t${first.term}` : `t${first.term}..t${last.term}`;
  return `${first.index}..${last.index}/${terms}`;
}
