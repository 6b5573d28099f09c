import { KeyLoadClient, type KeyLoadClientOptions } from "../index.js";

/**
 * The clients a test file connects, with short backoff so retries stay quick, closed together (along
 * with anything else the file opens) when its tests end.
 */
export class TestClients {
  private readonly open: { close(): Promise<void> }[] = [];

  constructor(private readonly defaults: Partial<KeyLoadClientOptions> & { readonly apiKey: string }) {}

  connect(endpoints: string[], options: Partial<KeyLoadClientOptions> = {}): KeyLoadClient {
    const client = new KeyLoadClient({
      endpoints,
      backoff: { initialMs: 20, maxMs: 250 },
      ...this.defaults,
      ...options,
    });
    this.open.push(client);
    return client;
  }

  /** Closes `resource` with the clients. */
  closeLater<T extends { close(): Promise<void> }>(resource: T): T {
    this.open.push(resource);
    return resource;
  }

  async close(): Promise<void> {
    await Promise.all(this.open.map((c) => c.close()));
  }
}
