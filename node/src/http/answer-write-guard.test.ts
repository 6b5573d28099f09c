import type { Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { JsonText } from "../requests/json-text.js";
import { bearer } from "./test-fixtures/fake-voter-service.js";
import { type HttpFixture, httpFixture } from "./test-fixtures/http-fixture.js";
import { open } from "./test-fixtures/raw-http.js";

let fx: HttpFixture | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await fx?.close();
  fx = undefined;
});

async function until(condition: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!condition() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return condition();
}

describe("an answer its client stops reading", () => {
  it("ends its connection and frees its HTTP slot, while a client that reads gets the same answer", async () => {
    fx = httpFixture({
      admission: { MaxRequests: 2 },
      limits: { requestTimeoutMs: 1_000, keepAliveTimeoutMs: 1_000 },
    });
    // Far more than the socket buffers hold on both sides, so the write stalls.
    const big = new JsonText(JSON.stringify({ v: "x".repeat(32 * 1024 * 1024) }));
    fx.service.onRead = async () => big;
    const { port, url } = await fx.listen();
    const closed: boolean[] = [];
    for (const who of ["writer", "reader"] as const) {
      const socket = await open(port);
      sockets.push(socket);
      socket.on("error", () => undefined);
      const index = closed.push(false) - 1;
      socket.on("close", () => {
        closed[index] = true;
      });
      socket.pause();
      socket.write(`GET /v1/catalog/k HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer(who)}\r\n\r\n`);
    }
    const governor = fx.governor;
    expect(await until(() => governor.usage("data").requests === 2, 2_000)).toBe(true);
    // No write progress for half the request timeout, at most the whole of it, ends each connection.
    expect(await until(() => governor.usage("data").requests === 0, 4_000)).toBe(true);
    // The clients, reading again, find their connections gone.
    for (const socket of sockets) socket.resume();
    expect(await until(() => closed.every(Boolean), 2_000)).toBe(true);
    const answer = await fetch(`${url}/v1/catalog/k`, { headers: { authorization: bearer("reader") } });
    expect(answer.status).toBe(200);
    expect((await answer.text()).length).toBeGreaterThan(32 * 1024 * 1024);
  }, 20_000);
});
