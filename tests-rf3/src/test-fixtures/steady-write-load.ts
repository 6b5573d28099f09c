import { setTimeout as sleep } from "node:timers/promises";
import {
  ConnectionError,
  type KeyLoadClient,
  type PutResult,
  ResourceExhaustedError,
  UnavailableError,
  UnknownWriteOutcomeError,
} from "@keyload/client";
import { expect } from "vitest";

/** One write of the load: a key of its own, written once, under a command ID of its own. */
export interface LoadWrite {
  readonly commandId: string;
  readonly key: string;
  readonly value: { readonly writer: number; readonly n: number };
}

/**
 * Writers that each put one new key after another, back to back, through their own client, and sort
 * every write by how it ended: acknowledged (with the time), outcome unknown, or refused before it
 * was submitted (Unavailable, an admission refusal, or no voter reached). Any other end fails the test.
 */
export class SteadyWriteLoad {
  readonly acked: (LoadWrite & { readonly at: number })[] = [];
  readonly unknown: LoadWrite[] = [];
  readonly refused: LoadWrite[] = [];
  private running = true;
  private failure: { readonly error: unknown } | undefined;
  private readonly loops: Promise<void>[];

  constructor(
    writers: readonly KeyLoadClient[],
    private readonly prefix: string,
  ) {
    this.loops = writers.map((client, writer) =>
      this.write(client, writer).catch((error: unknown) => {
        this.failure ??= { error };
        this.running = false;
      }),
    );
  }

  /** How many writes were acknowledged after `since` (ms since the epoch). */
  ackedSince(since: number): number {
    return this.acked.filter((w) => w.at >= since).length;
  }

  /** Ends the writers once their current write has ended; throws the first unexpected end. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    if (this.failure) throw this.failure.error;
  }

  private async write(client: KeyLoadClient, writer: number): Promise<void> {
    for (let n = 0; this.running; n++) {
      const write: LoadWrite = {
        commandId: `${this.prefix}-${writer}-${n}`,
        key: `${this.prefix}/${writer}/${n}`,
        value: { writer, n },
      };
      let result: PutResult;
      try {
        result = await client.put(write.key, write.value, { commandId: write.commandId });
      } catch (error) {
        if (error instanceof UnknownWriteOutcomeError) this.unknown.push(write);
        else if (
          error instanceof UnavailableError ||
          error instanceof ResourceExhaustedError ||
          error instanceof ConnectionError
        ) {
          this.refused.push(write);
        } else throw error;
        // No leader for the moment: a pause, rather than a spin of refusals.
        await sleep(20);
        continue;
      }
      expect(result).toEqual({ commandId: write.commandId, key: write.key, version: 1 });
      this.acked.push({ ...write, at: Date.now() });
    }
  }
}
