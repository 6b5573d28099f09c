import { createServer, type Server } from "node:net";
import { pickFreePorts } from "@keyload/node/net";
import { VOTER_NAMES, type VoterPorts, type VoterResource } from "./app-model.js";
import { PortInUseError } from "./apphost-errors.js";

function listen(host: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen({ host, port, exclusive: true }, () => resolve(server));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Free ports for every voter's HTTP and peer listeners, outside the kernel's ephemeral range. */
export async function pickVoterPorts(host: string): Promise<VoterPorts[]> {
  const ports = await pickFreePorts(host, VOTER_NAMES.length * 2);
  return VOTER_NAMES.map((_, i) => ({ httpPort: ports[2 * i]!, peerPort: ports[2 * i + 1]! }));
}

/**
 * Throws PortInUseError naming the first of the voters' ports that another process holds, once
 * `graceMs` has passed: a voter killed a moment ago may still hold its own. Its pid turns to a zombie
 * as soon as its main thread exits, but its other threads, and its listeners with them, can take a
 * moment longer (tens to hundreds of milliseconds on a loaded machine).
 */
export async function assertPortsFree(voters: readonly VoterResource[], graceMs = 0): Promise<void> {
  const deadline = Date.now() + graceMs;
  for (;;) {
    try {
      return await checkPortsFree(voters);
    } catch (err) {
      if (!(err instanceof PortInUseError) || Date.now() >= deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

async function checkPortsFree(voters: readonly VoterResource[]): Promise<void> {
  for (const voter of voters) {
    await assertPortFree(voter.host, voter.httpPort, `${voter.name} HTTP`);
    await assertPortFree(voter.host, voter.peerPort, `${voter.name} peer`);
  }
}

/** Throws PortInUseError (with `remedy`, when given) if another process holds `port` on `host`. */
export async function assertPortFree(
  host: string,
  port: number,
  purpose: string,
  remedy?: string,
): Promise<void> {
  let server: Server;
  try {
    server = await listen(host, port);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE")
      throw new PortInUseError(port, host, purpose, remedy);
    throw err;
  }
  await close(server);
}
