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
    // Below the ephemeral range, from 10000: the search starts at 10080, the Fetch standard's bad port.
    if (low <= 10_081) return;
    const random = vi.spyOn(Math, "random").mockReturnValue((10_080 - 10_000 + 0.5) / (low - 10_000));
    try {
      const [port] = await pickFreePorts("127.0.0.1", 1);
      expect(port).toBeGreaterThan(10_080);
    } finally {
      random.mockRestore();
    }
  });
});
