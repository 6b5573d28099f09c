/**
 * The control prober's child process (see overload-control.ts): told its spec, it makes one control
 * write to warm its connection and says it is ready; each `run` then sends a control write every
 * interval for the given seconds, waits for the outstanding answers and sends back what it measured.
 */
import { randomBytes } from "node:crypto";
import { subscribe } from "node:diagnostics_channel";
import { Pool } from "undici";
import {
  type ControlReply,
  type ControlRequest,
  type ControlResult,
  type ControlSpec,
  SETTLE_MS,
} from "./overload-control.js";

/** How long the prober waits for answers still outstanding when its time is up. */
const DRAIN_MS = 15_000;

function reply(message: ControlReply): void {
  process.send?.(message);
}

function prober(
  spec: ControlSpec,
): (seq: number) => { path: string; headers: Record<string, string>; body: string } {
  if (spec.system === "keyload") {
    const channel = `control-${spec.tag}`;
    return (seq) => ({
      path: `/v1/dispatch/${channel}`,
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${spec.apiKey ?? ""}`,
        "keyload-command-id": `control-${spec.tag}-${seq}`,
      },
      body: JSON.stringify({ directive: "tick", data: { seq } }),
    });
  }
  const key = Buffer.from(`control-${spec.tag}`).toString("base64");
  return (seq) => ({
    path: "/v3/kv/put",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ key, value: Buffer.from(`tick ${seq}`).toString("base64") }),
  });
}

async function main(spec: ControlSpec): Promise<void> {
  // A few connections: a slow answer must not hold back the next write, which goes out on schedule.
  const pool = new Pool(spec.origin, { connections: 8, pipelining: 1, keepAliveTimeout: 60_000 });
  const request = prober(spec);
  let seq = 0;
  let connected = 0;
  subscribe("undici:client:connected", () => {
    connected++;
  });

  const send = async (): Promise<{ ok: boolean; ms: number; kind: string }> => {
    const req = request(seq++);
    const sent = performance.now();
    try {
      const response = await pool.request({ method: "POST", ...req, headersTimeout: 30_000 });
      const text = await response.body.text();
      const ms = performance.now() - sent;
      if (response.statusCode >= 200 && response.statusCode < 300) return { ok: true, ms, kind: "" };
      let reason = "";
      try {
        const body = JSON.parse(text) as { error?: { reason?: string } | string; message?: string };
        reason = typeof body.error === "object" ? (body.error.reason ?? "") : (body.message ?? "");
      } catch {
        // Not JSON: the status alone.
      }
      return { ok: false, ms, kind: `HTTP ${response.statusCode}${reason ? ` ${reason}` : ""}` };
    } catch (err) {
      const code = (err as { code?: string }).code;
      return { ok: false, ms: performance.now() - sent, kind: code ?? String(err) };
    }
  };

  const warm = await send();
  if (!warm.ok) throw new Error(`the first control write failed: ${warm.kind}`);
  reply({ type: "ready" });

  const run = async (seconds: number): Promise<ControlResult> => {
    const latencies: number[] = [];
    const settledLatencies: number[] = [];
    const connectedBefore = connected;
    const errors: Record<string, number> = {};
    const outstanding = new Set<Promise<void>>();
    let sent = 0;
    let maxLateMs = 0;
    const start = performance.now();
    const end = start + seconds * 1000;
    for (let k = 0; ; k++) {
      const due = start + k * spec.intervalMs;
      if (due >= end) break;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      maxLateMs = Math.max(maxLateMs, performance.now() - due);
      sent++;
      const settled = due - start >= SETTLE_MS;
      const p = send().then((r) => {
        if (!r.ok) {
          errors[r.kind] = (errors[r.kind] ?? 0) + 1;
          return;
        }
        latencies.push(r.ms);
        if (settled) settledLatencies.push(r.ms);
      });
      outstanding.add(p);
      void p.finally(() => outstanding.delete(p));
    }
    const drained = Promise.all(outstanding).then(() => true);
    const timedOut = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), DRAIN_MS).unref());
    if (!(await Promise.race([drained, timedOut]))) {
      errors[`unanswered after ${DRAIN_MS / 1000} s`] = outstanding.size;
    }
    latencies.sort((a, b) => a - b);
    settledLatencies.sort((a, b) => a - b);
    return {
      sent,
      latencies,
      settledLatencies,
      newConnections: connected - connectedBefore,
      errors,
      maxLateMs,
    };
  };

  process.on("message", (message: ControlRequest) => {
    if (message.type === "exit") {
      void pool.destroy().finally(() => process.exit(0));
      return;
    }
    run(message.seconds).then(
      (result) => reply({ type: "result", result }),
      (err: unknown) => reply({ type: "failed", message: String(err) }),
    );
  });
}

// The parent going away (Ctrl-C, a crash) ends the prober too.
process.on("disconnect", () => process.exit(0));
process.once("message", (spec: ControlSpec) => {
  main({ ...spec, tag: spec.tag || randomBytes(4).toString("hex") }).catch((err: unknown) => {
    reply({ type: "failed", message: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  });
});
