import { createServer } from "node:net";

/** A loopback URL nothing listens on: a port that was just free, closed again. */
export async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
}
