import { readFileSync } from "node:fs";
import { type AddressInfo, createServer, type Server } from "node:net";

/**
 * Ports for listeners that are named before they are opened (a voter's peer address goes into every
 * other voter's configuration before any of them starts).
 *
 * Asking the kernel for port 0 and closing it again is not enough: such a port comes from the
 * ephemeral range, so between the pick and the real listen any outgoing connection on the machine may
 * take it as its source port (seen in CI as EADDRINUSE). These ports therefore come from below the
 * ephemeral range, where the kernel never assigns source ports, and each is checked by binding it. A
 * port picked is free until its listener opens, and another process may pick it meanwhile (seen in CI:
 * two test workers starting clusters at once): each process starts its search at a random place in a
 * slice of the range of its own, by its pid, so parallel processes rarely try the same ports. All picked ports are held
 * open together, so one call never returns a port twice, and a process never hands the same port
 * out twice while it has others left.
 */
const LOWEST = 10_000;
const SLICES = 16;
const DEFAULT_EPHEMERAL: readonly [number, number] = [32_768, 60_999];
const handedOut = new Set<number>();
/**
 * Ports the Fetch standard's "bad port" list blocks: `fetch` (undici's too) and browsers refuse to
 * connect to them, so a voter listening there is unreachable from the dashboard and most tests.
 */
const FETCH_BLOCKED_PORTS: ReadonlySet<number> = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104,
  109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515,
  526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049,
  3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

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

/** Where a search starts in a range of `size` ports: at random within this process's slice of it. */
function searchStart(size: number): number {
  const sliceSize = Math.max(1, Math.floor(size / SLICES));
  return ((process.pid % SLICES) * sliceSize + Math.floor(Math.random() * sliceSize)) % size;
}

/** `count` distinct ports on `host` that were free a moment ago and lie outside the ephemeral range. */
export async function pickFreePorts(host: string, count: number): Promise<number[]> {
  const [low, high] = candidateRange();
  const size = high - low + 1;
  const held: Server[] = [];
  try {
    let probe = searchStart(size);
    for (let tried = 0; tried < size && held.length < count; tried++, probe = (probe + 1) % size) {
      const port = low + probe;
      if (handedOut.has(port) || FETCH_BLOCKED_PORTS.has(port)) continue;
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
