import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AckWatermark } from "./ack-watermark.js";

/** A crash stands in as a write that throws: to any file whose name contains `crashOn`. */
const crash = vi.hoisted(() => ({ on: null as string | null, fds: new Set<number>() }));

vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  return {
    ...real,
    openSync: (...args: Parameters<typeof real.openSync>): number => {
      const fd = real.openSync(...args);
      if (crash.on !== null && String(args[0]).includes(crash.on)) crash.fds.add(fd);
      return fd;
    },
    writeSync: (...args: Parameters<typeof real.writeSync>): number => {
      if (crash.fds.has(args[0])) throw new Error("simulated crash before the write");
      return (real.writeSync as (...a: unknown[]) => number)(...args);
    },
  };
});

const dirs: string[] = [];
afterEach(() => {
  crash.on = null;
  crash.fds.clear();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "keyload-ack-"));
  dirs.push(dir);
  return dir;
}

describe("acknowledgement watermark", () => {
  it("a crash while it is first created leaves no watermark, so the next open creates it again", () => {
    const dir = tempDir();
    const path = join(dir, "raft-log.ack");
    crash.on = "raft-log.ack";
    expect(() => AckWatermark.open(path, { seq: 0, lastIndex: 0 })).toThrow("simulated crash");
    crash.on = null;
    crash.fds.clear();
    // An empty raft-log.ack here would be refused by every later open, although nothing was written.
    expect(AckWatermark.read(path)).toBeNull();
    AckWatermark.open(path, { seq: 3, lastIndex: 7 }).close();
    expect(AckWatermark.read(path)).toEqual({ seq: 3, lastIndex: 7 });
    expect(readdirSync(dir)).toEqual(["raft-log.ack"]);
  });

  it("keeps what it was set to across reopening", () => {
    const path = join(tempDir(), "raft-log.ack");
    const mark = AckWatermark.open(path, { seq: 1, lastIndex: 1 });
    mark.write({ seq: 9, lastIndex: 40 });
    mark.close();
    expect(AckWatermark.read(path)).toEqual({ seq: 9, lastIndex: 40 });
    AckWatermark.open(path, { seq: 10, lastIndex: 41 }).close();
    expect(AckWatermark.read(path)).toEqual({ seq: 10, lastIndex: 41 });
  });
});
