import { InternalError } from "@keyload/contract";
import type { SqliteLimits } from "../fs/sqlite-limits.js";
import { JsonText } from "../requests/json-text.js";
import type {
  CatalogRead,
  CatalogReadWorkerData,
  FromCatalogReader,
  ToCatalogReader,
} from "./catalog-read-protocol.js";
import { WorkerCalls } from "./worker-calls.js";
import { siblingModule } from "./worker-thread.js";

/**
 * Answers bulk gets, queries, traversals and search hits' documents on a worker thread with its own
 * read-only connection, so a long scan or a large answer never holds the applying thread's event loop:
 * the worker reads the rows and builds the answer's JSON text, and this thread only sends it. The
 * worker starts with the first read and stays for the next; an idle one does not keep the process alive.
 *
 * The connection sees only what the applying connection has committed, which may trail what it has
 * applied (see ApplyCommits): the caller commits first (see StateMachine.readPage).
 */
export class CatalogReader {
  private readonly calls: WorkerCalls<ToCatalogReader, FromCatalogReader>;

  constructor(path: string, limits: SqliteLimits) {
    const data: CatalogReadWorkerData = { path, limits };
    this.calls = new WorkerCalls(
      "the read worker",
      siblingModule(import.meta.url, "catalog-read-worker"),
      data,
      (message) => new InternalError(message, { reason: "ReadFailed" }),
    );
  }

  async read(read: CatalogRead): Promise<JsonText> {
    const reply = await this.calls.call((id) => ({ type: "read", id, read }));
    if (reply.ok) return new JsonText(reply.text);
    throw new InternalError(`the read failed: ${reply.message}`, { reason: "ReadFailed" });
  }

  /** After the database file was replaced: reads sent from now on see the new file. */
  reopen(): void {
    this.calls.tell({ type: "reopen" });
  }

  close(): Promise<void> {
    return this.calls.close("the state machine closed before the read was answered");
  }
}
