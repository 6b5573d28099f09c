import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { describe, expect, it, vi } from "vitest";
import { pickFreePorts } from "./free-ports.js";

function ephemeral(): [number, number] {
  try {
    const [low, high] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/)
      .map(Number);
    return [low ?? 32_768, high ?? 60_999];
  } catch {
    return [32_768, 60_999];
  }
}

function listen(port: number): Promise<() => Promise<void>> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen({ host: "127.0.0.1", port, exclusive: true }, () =>
      resolve(() => new Promise((done) => server.close(() => done()))),
    );
  });
}

describe("pickFreePorts", () => {
  it("returns distinct ports outside the ephemeral range that can be listened on", async () => {
    const [low, high] = ephemeral();
    const ports = await pickFreePorts("127.0.0.1", 12);
    expect(new Set(ports).size).toBe(12);
    for (const port of ports) expect(port < low || port > high).toBe(true);
    const closers = await Promise.all(ports.map(listen));
    await Promise.all(closers.map((close) => close()));
  });

  it("never hands out a port again while it has others, and skips ports someone holds", async () => {
    const first = await pickFreePorts("127.0.0.1", 6);
    const closeHeld = await listen(first[0] as number);
    const second = await pickFreePorts("127.0.0.1", 6);
    await closeHeld();
    expect(second.filter((p) => first.includes(p))).toEqual([]);
  });

  it("skips a port fetch refuses to connect to, even where its search starts", async () => {
    const [low] = ephemeral();
    // Below the ephemeral range, from 10000: the search starts at 10080, the Fetch standard's bad port,
    // in the first of the range's 16 slices, that of a process whose pid is a multiple of 16.
    const sliceSize = Math.floor((low - 10_000) / 16);
    if (sliceSize <= 81) return;
    const pid = Object.getOwnPropertyDescriptor(process, "pid")!;
    Object.defineProperty(process, "pid", { ...pid, value: 16 * 1000 });
    const random = vi.spyOn(Math, "random").mockReturnValue((10_080 - 10_000 + 0.5) / sliceSize);
    try {
      const [port] = await pickFreePorts("127.0.0.1", 1);
      expect(port).toBeGreaterThan(10_080);
    } finally {
      random.mockRestore();
      Object.defineProperty(process, "pid", pid);
    }
  });

  it("starts each process's search in a slice of the range of its own, by its pid", async () => {
    const [low] = ephemeral();
    const sliceSize = Math.floor((low - 10_000) / 16);
    const pid = Object.getOwnPropertyDescriptor(process, "pid")!;
    const random = vi.spyOn(Math, "random").mockReturnValue(0);
    try {
      const starts: number[] = [];
      for (const slice of [3, 7]) {
        Object.defineProperty(process, "pid", { ...pid, value: 16 * 1000 + slice });
        const [port] = await pickFreePorts("127.0.0.1", 1);
        starts.push(port as number);
      }
      // Each search found its slice's first port free, or one shortly after it.
      expect(starts[0]).toBeGreaterThanOrEqual(10_000 + 3 * sliceSize);
      expect(starts[0]).toBeLessThan(10_000 + 4 * sliceSize);
      expect(starts[1]).toBeGreaterThanOrEqual(10_000 + 7 * sliceSize);
      expect(starts[1]).toBeLessThan(10_000 + 8 * sliceSize);
    } finally {
      random.mockRestore();
      Object.defineProperty(process, "pid", pid);
    }
  });
});
