import { readFileSync } from "node:fs";
import { type AddressInfo, createServer, type Server } from "node:net";

/**
 * Ports for listeners that are named before they are opened (a voter's peer address goes into every
 * other voter's configuration before any of them starts).
 *
 * Asking the kernel for port 0 and closing it again is not enough: such a port comes from the
 * ephemeral range, so between the pick and the real listen any outgoing connection on the machine may
 * take it as its source port (seen in CI as EADDRINUSE). These ports therefore come from below the
 * ephemeral range, where the kernel never assigns source ports, at a random place so that parallel
 * processes rarely try the same one, and each is checked by binding it. All picked ports are held
 * open together, so one call never returns a port twice, and a process never hands the same port
 * out twice while it has others left.
 */
const LOWEST = 10_000;
const DEFAULT_EPHEMERAL: readonly [number, number] = [32_768, 60_999];
const handedOut = new Set<number>();

function ephemeralRange(): readonly [number, number] {
  try {
    const [low, high] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/)
      .map(Number);
    if (low !== undefined && high !== undefined && low > 0 && high >= low) return [low, high];
  } catch {
    // Not Linux: the IANA dynamic range is the usual default elsewhere.
  }
  return DEFAULT_EPHEMERAL;
}

/** The widest range of unprivileged ports outside the ephemeral range. */
function candidateRange(): readonly [number, number] {
  const [low, high] = ephemeralRange();
  const below: [number, number] = [LOWEST, low - 1];
  const above: [number, number] = [high + 1, 65_535];
  return below[1] - below[0] >= above[1] - above[0] ? below : above;
}

function tryListen(host: string, port: number): Promise<Server | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(null));
    server.listen({ host, port, exclusive: true }, () => resolve(server));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

export class NoFreePortError extends Error {
  readonly code = "NoFreePort";
  constructor(host: string, count: number) {
    super(`could not find ${count} free ports on ${host}`);
    this.name = "NoFreePortError";
  }
}

/** `count` distinct ports on `host` that were free a moment ago and lie outside the ephemeral range. */
export async function pickFreePorts(host: string, count: number): Promise<number[]> {
  const [low, high] = candidateRange();
  const size = high - low + 1;
  const held: Server[] = [];
  try {
    let probe = Math.floor(Math.random() * size);
    for (let tried = 0; tried < size && held.length < count; tried++, probe = (probe + 1) % size) {
      const port = low + probe;
      if (handedOut.has(port)) continue;
      const server = await tryListen(host, port);
      if (server) held.push(server);
    }
    if (held.length < count) throw new NoFreePortError(host, count);
    const ports = held.map((s) => (s.address() as AddressInfo).port);
    for (const port of ports) handedOut.add(port);
    if (handedOut.size > size / 2) handedOut.clear();
    return ports;
  } finally {
    await Promise.all(held.map(close));
  }
}

/** One port, as `pickFreePorts(host, 1)`. */
export async function pickFreePort(host: string): Promise<number> {
  const [port] = await pickFreePorts(host, 1);
  return port as number;
}
