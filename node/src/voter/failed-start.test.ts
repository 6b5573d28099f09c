import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { loadVoterConfig } from "../config/voter-config.js";
import { pickFreePorts } from "../net/free-ports.js";
import type { DurableLogStore } from "../storage/durable-log-store.js";
import { singleVoterEnv } from "./test-fixtures/cluster-envs.js";
import { call, writeThroughSingleVoter } from "./test-fixtures/voter-cluster.js";
import { killProcess, startVoterProcess } from "./test-fixtures/voter-process.js";
import { type RunningVoter, startVoter } from "./voter.js";

let dir: string | undefined;
let blocker: Server | undefined;
const connections = new Set<Socket>();
let voter: RunningVoter | undefined;
let holder: ChildProcess | undefined;
/** Voters that started where the test expects them to fail: stopped whatever the test's outcome. */
const unexpected: ChildProcess[] = [];
afterEach(async () => {
  if (holder) await killProcess(holder);
  holder = undefined;
  for (const proc of unexpected.splice(0)) await killProcess(proc);
  await voter?.shutdown();
  voter = undefined;
  if (blocker) await freePort(blocker);
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A voter that started though it should not have: kept for afterEach to stop, and said so. */
function startedAnyway(proc: ChildProcess): string {
  unexpected.push(proc);
  return `started as process ${proc.pid}`;
}

/** Holds `port` as a listener that never answers, so a voter's HTTP listen on it fails. */
async function takePort(port: number): Promise<Server> {
  const server = createServer((socket) => {
    connections.add(socket);
    socket.once("close", () => connections.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  blocker = server;
  return server;
}

/** Closes the listener and the connections a voter's health checks left open on it. */
async function freePort(server: Server): Promise<void> {
  blocker = undefined;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  for (const socket of connections) socket.destroy();
  await closed;
}

describe("a start that fails part way", () => {
  it("closes what it opened: the same directory and ports start a voter in this process next", async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-failed-start-"));
    const [httpPort, peerPort] = (await pickFreePorts("127.0.0.1", 2)) as [number, number];
    const config = loadVoterConfig({ env: singleVoterEnv(dir, httpPort, peerPort) });
    const b = await takePort(httpPort!);

    // The HTTP port is the last thing a start takes: storage, the peer port and the driver are up by then.
    await expect(startVoter(config, pino({ level: "silent" }))).rejects.toMatchObject({ code: "EADDRINUSE" });

    await freePort(b);
    voter = await startVoter(config, pino({ level: "silent" }));
    expect((await writeThroughSingleVoter(voter, "after-failed-start")).status).toBe(200);
  });

  it("refuses to start when the state lost what the log's snapshot point relies on", async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-failed-start-"));
    const [httpPort, peerPort] = (await pickFreePorts("127.0.0.1", 2)) as [number, number];
    const env = singleVoterEnv(dir, httpPort, peerPort, {
      KeyLoad__Raft__SnapshotIntervalEntries: "20",
    });
    voter = await startVoter(loadVoterConfig({ env }), pino({ level: "silent" }));
    expect((await writeThroughSingleVoter(voter, "first")).status).toBe(200);
    const store = (voter.driver as unknown as { opts: { store: DurableLogStore } }).opts.store;
    for (let i = 0; store.snapshotIndex() === 0; i++) {
      expect(i).toBeLessThan(200);
      const put = await call(voter.httpUrl, "PUT", `/v1/catalog/k${i}`, {
        body: { value: i },
        commandId: `w${i}`,
      });
      expect(put.status).toBe(200);
    }
    // The log is compacted behind a point with no file: the state database is the only copy before it.
    expect(store.currentSnapshot()).toBeNull();
    await voter.shutdown();
    voter = undefined;
    rmSync(join(dir, "state"), { recursive: true, force: true });
    await expect(startVoter(loadVoterConfig({ env }), pino({ level: "silent" }))).rejects.toMatchObject({
      code: "StorageCorruption",
      message: expect.stringMatching(/behind the log's snapshot point/),
    });
  });

  it("tells the operator of keyload-node why, in one line, without a stack", async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-failed-start-"));
    const [httpPort, peerPort, otherHttp, otherPeer] = (await pickFreePorts("127.0.0.1", 4)) as number[];
    const env = (http: number, peer: number) => singleVoterEnv(dir!, http, peer);
    const b = await takePort(httpPort!);
    const taken = await startVoterProcess(env(httpPort!, peerPort!)).then(
      startedAnyway,
      (err: Error) => err.message,
    );
    expect(taken).toMatch(/exited with 1: keyload-node: failed to start: listen EADDRINUSE[^\n]*\n$/);

    await freePort(b);
    holder = await startVoterProcess(env(httpPort!, peerPort!));
    const locked = await startVoterProcess(env(otherHttp!, otherPeer!)).then(
      startedAnyway,
      (err: Error) => err.message,
    );
    expect(locked).toContain(
      `keyload-node: failed to start: the data directory ${dir} is in use by process ${holder.pid}`,
    );
    expect(locked).not.toContain("    at ");
  }, 60_000);
});
