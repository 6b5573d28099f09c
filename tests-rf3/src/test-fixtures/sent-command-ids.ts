import { channel } from "node:diagnostics_channel";

const REQUEST_CREATE = channel("undici:request:create");

interface RequestCreateMessage {
  readonly request: { readonly headers: readonly string[] | string };
}

function commandIdOf(headers: readonly string[] | string): string | undefined {
  if (typeof headers === "string") return /^keyload-command-id:\s*(\S+)\s*$/im.exec(headers)?.[1];
  for (let i = 0; i + 1 < headers.length; i += 2) {
    if (headers[i]!.toLowerCase() === "keyload-command-id") return headers[i + 1];
  }
  return undefined;
}

/**
 * How many requests undici sent per command ID while this is open, read from undici's own diagnostics
 * channel: the client's real requests to the real voters, so a test can tell a write that was retried
 * from one whose first attempt answered, without anything between the client and the cluster.
 */
export class SentCommandIds {
  private readonly sent = new Map<string, number>();
  private readonly listener = (message: unknown): void => {
    const commandId = commandIdOf((message as RequestCreateMessage).request.headers);
    if (commandId !== undefined) this.sent.set(commandId, (this.sent.get(commandId) ?? 0) + 1);
  };

  constructor() {
    REQUEST_CREATE.subscribe(this.listener);
  }

  /** Requests sent with `commandId`. */
  count(commandId: string): number {
    return this.sent.get(commandId) ?? 0;
  }

  close(): void {
    REQUEST_CREATE.unsubscribe(this.listener);
  }
}
