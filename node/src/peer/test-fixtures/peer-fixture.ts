import type { Server } from "node:net";
import { pino } from "pino";
import { pickFreePorts } from "../../net/free-ports.js";
import type { Message } from "../../raft/types.js";
import { InMemoryClusterId } from "../cluster-id.js";
import { InMemoryMemberIncarnations } from "../member-incarnations.js";
import type { PeerAddress } from "../peer-address.js";
import { PeerTransport, type PeerTransportOptions } from "../peer-transport.js";

export const SECRET = "correct horse battery staple";
export const LIMITS = { maxMutationBytes: 8 * 1024 * 1024, maxLeaseBatch: 256 };
export const CLUSTER_ID = "c-test";

export interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly nodeId?: string;
  readonly peerId?: string | null;
  readonly remoteAddress?: string;
  readonly reason?: string;
  readonly [field: string]: unknown;
}

/** Listens on a loopback port of the kernel's choosing and resolves with it. */
export function listenOnFreePort(server: Server): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (address === null || typeof address === "string") reject(new Error("no port"));
      else resolve(address.port);
    });
  });
}

export async function waitFor(condition: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out waiting for a condition");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Transports on loopback, with their logs and received messages captured; `closeAll` in afterEach. */
export class PeerFixture {
  readonly logs = new Map<string, LogLine[]>();
  readonly inboxes = new Map<string, Message[]>();
  private readonly running = new Set<PeerTransport>();

  private constructor(readonly voters: readonly PeerAddress[]) {}

  static async create(ids: readonly string[]): Promise<PeerFixture> {
    // Named before the transports listen (each dials the others' ports), so from outside the
    // ephemeral range, where no outgoing connection can take one meanwhile.
    const ports = await pickFreePorts("127.0.0.1", ids.length);
    return new PeerFixture(ids.map((id, i) => ({ id, host: "127.0.0.1", port: ports[i]! })));
  }

  address(id: string): PeerAddress {
    const voter = this.voters.find((v) => v.id === id);
    if (!voter) throw new Error(`no voter ${id}`);
    return voter;
  }

  async start(id: string, overrides: Partial<PeerTransportOptions> = {}): Promise<PeerTransport> {
    const transport = this.transport(id, overrides);
    await transport.start();
    return transport;
  }

  /** A transport not started yet (but closed by `closeAll`). */
  transport(id: string, overrides: Partial<PeerTransportOptions> = {}): PeerTransport {
    const lines: LogLine[] = [];
    this.logs.set(id, lines);
    const inbox: Message[] = [];
    this.inboxes.set(id, inbox);
    const logger = pino({ level: "debug" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const port = overrides.port ?? this.address(id).port;
    const transport = new PeerTransport({
      nodeId: id,
      host: "127.0.0.1",
      port,
      voters: this.voters,
      secret: SECRET,
      httpUrl: `http://127.0.0.1:${port + 1}`,
      canonicalLimits: LIMITS,
      clusterId: new InMemoryClusterId(CLUSTER_ID),
      incarnations: new InMemoryMemberIncarnations({ memberId: id, incarnation: `${id}-first` }),
      logger,
      ...overrides,
    });
    transport.onMessage((message) => inbox.push(message));
    this.running.add(transport);
    return transport;
  }

  async stop(transport: PeerTransport): Promise<void> {
    this.running.delete(transport);
    await transport.close();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.running].map((t) => t.close()));
    this.running.clear();
  }

  log(id: string): LogLine[] {
    return this.logs.get(id) ?? [];
  }

  inbox(id: string): Message[] {
    return this.inboxes.get(id) ?? [];
  }
}

export function heartbeat(from: string, to: string, commit = 1): Message {
  return { type: "heartbeat", from, to, term: 1, commit, readRound: 0 };
}

/** Waits until every pair of transports has its outbound connection up. */
export async function allConnected(transports: Record<string, PeerTransport>): Promise<void> {
  const ids = Object.keys(transports);
  await waitFor(() =>
    ids.every((a) => ids.every((b) => a === b || transports[a]!.peerInfo(b)?.connected === true)),
  );
}
