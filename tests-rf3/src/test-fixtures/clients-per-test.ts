import { KeyLoadClient, type KeyLoadClientOptions } from "@keyload/client";
import { afterEach } from "vitest";

/**
 * Clients of the voters a test picks and orders itself (a TestCluster's own `client()` lists all three,
 * in order), with short backoff so retries stay quick. Call at a test file's top level; the clients are
 * closed after each test.
 */
export function clientsPerTest(): (options: KeyLoadClientOptions) => KeyLoadClient {
  const open: KeyLoadClient[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((client) => client.close()));
  });
  return (options) => {
    const client = new KeyLoadClient({ backoff: { initialMs: 20, maxMs: 250 }, ...options });
    open.push(client);
    return client;
  };
}
