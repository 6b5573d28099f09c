/**
 * Peer link throughput and CPU: two peer transports on loopback in this process, one sending Raft
 * appends to the other as fast as the link takes them (a window of messages in flight), for a few
 * message shapes. It prints messages and MiB per second and the process's CPU microseconds per message
 * and per MiB. With `--baseline DIR` (another checkout of this repository, its dependencies installed)
 * it loads that checkout's transport as well and runs both alternately, each shape twice in ABBA order,
 * printing the ratio: how a change to the transport (sealing frames, say) moves these figures.
 *
 *   pnpm --filter @keyload/scripts exec tsx --conditions=source bench/peer-link.ts [--seconds 5]
 *     [--baseline /path/to/other/checkout]
 */
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Entry, Message } from "../../node/src/raft/types.js";
import { scriptArgs } from "./script-args.js";

interface Transport {
  start(): Promise<void>;
  close(): Promise<void>;
  send(message: Message): void;
  onMessage(handler: (message: Message) => void): void;
  peerInfo(id: string): { connected: boolean } | null;
}

interface Implementation {
  readonly label: string;
  create(id: string, voters: { id: string; host: string; port: number }[]): Transport;
}

interface Shape {
  readonly name: string;
  readonly entries: number;
  readonly entryBytes: number;
}

const SHAPES: readonly Shape[] = [
  { name: "heartbeat-sized (1 × 16 B)", entries: 1, entryBytes: 16 },
  { name: "64 × 1 KiB entries", entries: 64, entryBytes: 1024 },
  { name: "1 × 64 KiB entry", entries: 1, entryBytes: 64 * 1024 },
];
const WINDOW = 64;
const MiB = 1024 * 1024;

async function load(root: string, label: string): Promise<Implementation> {
  const transportModule = await import(join(root, "node/src/peer/peer-transport.ts"));
  const clusterIdModule = await import(join(root, "node/src/peer/cluster-id.ts"));
  // The transport logs only connections coming and going; none of it is measured.
  const silent: Record<string, unknown> = { bindings: () => ({}), child: () => silent };
  for (const level of ["trace", "debug", "info", "warn", "error", "fatal"]) silent[level] = () => {};
  const logger = silent;
  return {
    label,
    create: (id, voters) =>
      new transportModule.PeerTransport({
        nodeId: id,
        host: "127.0.0.1",
        port: voters.find((v) => v.id === id)!.port,
        voters,
        secret: "a bench cluster secret, long enough",
        httpUrl: "http://127.0.0.1:1",
        canonicalLimits: { a: 1 },
        clusterId: new clusterIdModule.InMemoryClusterId("bench"),
        logger,
      }) as Transport,
  };
}

async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  const ports = await Promise.all(
    servers.map(
      (server) =>
        new Promise<number>((done) =>
          server.listen(0, "127.0.0.1", () => done((server.address() as { port: number }).port)),
        ),
    ),
  );
  await Promise.all(servers.map((server) => new Promise((done) => server.close(done))));
  return ports;
}

function append(shape: Shape, index: number): Message {
  const entries: Entry[] = [];
  for (let i = 0; i < shape.entries; i++) {
    const data = new Uint8Array(shape.entryBytes).fill((index + i) & 0xff);
    entries.push({ term: 1, index: index + i, type: "normal", data });
  }
  return {
    type: "append",
    from: "a",
    to: "b",
    term: 1,
    index: index - 1,
    logTerm: 1,
    entries,
    commit: 0,
    epoch: 1,
  };
}

interface Result {
  messagesPerSecond: number;
  mibPerSecond: number;
  cpuMicrosPerMessage: number;
  cpuMillisPerMib: number;
}

async function run(impl: Implementation, shape: Shape, seconds: number): Promise<Result> {
  const [portA, portB] = await freePorts(2);
  const voters = [
    { id: "a", host: "127.0.0.1", port: portA! },
    { id: "b", host: "127.0.0.1", port: portB! },
  ];
  const a = impl.create("a", voters);
  const b = impl.create("b", voters);
  let received = 0;
  b.onMessage(() => {
    received++;
  });
  await Promise.all([a.start(), b.start()]);
  try {
    while (a.peerInfo("b")?.connected !== true) await new Promise((done) => setTimeout(done, 5));
    // Messages are made ahead, so the loop measures the link, not the making of test data.
    const messages = Array.from({ length: WINDOW * 2 }, (_, i) => append(shape, 1 + i * shape.entries));
    let sent = 0;
    const pump = async (until: number) => {
      while (Date.now() < until) {
        while (sent - received < WINDOW) a.send(messages[sent++ % messages.length]!);
        await new Promise((done) => setImmediate(done));
      }
    };
    await pump(Date.now() + 500);
    const fromCount = received;
    const cpu = process.cpuUsage();
    const started = process.hrtime.bigint();
    await pump(Date.now() + seconds * 1000);
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
    const used = process.cpuUsage(cpu);
    const count = received - fromCount;
    const mib = (count * shape.entries * shape.entryBytes) / MiB;
    const cpuMicros = used.user + used.system;
    return {
      messagesPerSecond: count / elapsed,
      mibPerSecond: mib / elapsed,
      cpuMicrosPerMessage: cpuMicros / count,
      cpuMillisPerMib: cpuMicros / 1000 / mib,
    };
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

function combine(results: Result[]): Result {
  const mean = (pick: (r: Result) => number) => results.reduce((n, r) => n + pick(r), 0) / results.length;
  return {
    messagesPerSecond: mean((r) => r.messagesPerSecond),
    mibPerSecond: mean((r) => r.mibPerSecond),
    cpuMicrosPerMessage: mean((r) => r.cpuMicrosPerMessage),
    cpuMillisPerMib: mean((r) => r.cpuMillisPerMib),
  };
}

const { values } = parseArgs({
  args: scriptArgs(),
  options: { seconds: { type: "string", default: "5" }, baseline: { type: "string" } },
});
const seconds = Number(values.seconds);
const here = resolve(import.meta.dirname, "../..");
const implementations = [await load(here, "this checkout")];
if (values.baseline) implementations.push(await load(resolve(values.baseline), "baseline"));

for (const shape of SHAPES) {
  const runs = new Map<string, Result[]>(implementations.map((impl) => [impl.label, []]));
  // ABBA: each goes first once, so neither always pays for the other's leftovers.
  const order =
    implementations.length === 1 ? implementations : [...implementations, ...implementations.toReversed()];
  for (const impl of order) runs.get(impl.label)!.push(await run(impl, shape, seconds));
  console.log(`\n${shape.name}, ${WINDOW} in flight, ${seconds} s per pass`);
  const rows = implementations.map((impl) => ({ label: impl.label, result: combine(runs.get(impl.label)!) }));
  for (const { label, result } of rows) {
    console.log(
      `  ${label.padEnd(14)} ${result.messagesPerSecond.toFixed(0).padStart(8)} msg/s ` +
        `${result.mibPerSecond.toFixed(1).padStart(7)} MiB/s ` +
        `${result.cpuMicrosPerMessage.toFixed(1).padStart(7)} CPU µs/msg ` +
        `${result.cpuMillisPerMib.toFixed(2).padStart(6)} CPU ms/MiB`,
    );
  }
  if (rows.length === 2) {
    const [now, base] = [rows[0]!.result, rows[1]!.result];
    console.log(
      `  ratio          ${(now.messagesPerSecond / base.messagesPerSecond).toFixed(2)}× msg/s, ` +
        `${(now.cpuMicrosPerMessage / base.cpuMicrosPerMessage).toFixed(2)}× CPU per message`,
    );
  }
}
