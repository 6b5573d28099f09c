import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { loadVoterConfig } from "../config/voter-config.js";
import { pickFreePorts } from "../net/free-ports.js";
import { DurableLogStore } from "../storage/durable-log-store.js";
import { StorageFailedError } from "../storage/storage-errors.js";
import { singleVoterEnv } from "./test-fixtures/cluster-envs.js";
import { writeThroughSingleVoter } from "./test-fixtures/voter-cluster.js";
import { type RunningVoter, startVoter } from "./voter.js";

let dir: string | undefined;
let voter: RunningVoter | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await voter?.shutdown();
  voter = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe("a shutdown with a step that fails", () => {
  it("still closes the state, releases the directory and the ports, and reports the failure", async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-shutdown-"));
    const [httpPort, peerPort] = (await pickFreePorts("127.0.0.1", 2)) as [number, number];
    const config = loadVoterConfig({ env: singleVoterEnv(dir, httpPort, peerPort) });
    const first = await startVoter(config, pino({ level: "silent" }));
    const failure = new StorageFailedError("the log's files could not be closed");
    const close = DurableLogStore.prototype.close;
    vi.spyOn(DurableLogStore.prototype, "close").mockImplementationOnce(async function (
      this: DurableLogStore,
    ) {
      await close.call(this);
      throw failure;
    });

    await expect(first.shutdown()).rejects.toBe(failure);

    // The steps after the log's close ran: the same directory and ports start a voter here next.
    voter = await startVoter(config, pino({ level: "silent" }));
    expect((await writeThroughSingleVoter(voter, "after-failed-shutdown")).status).toBe(200);
  });
});
