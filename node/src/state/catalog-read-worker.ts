/**
 * The read worker's entry point: answers catalog reads from its own read-only connection to the state
 * database, one at a time, in the order asked. See CatalogReader.
 */
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { applySqliteLimits } from "../fs/sqlite-limits.js";
import { CatalogQueries } from "./catalog-query.js";
import type {
  CatalogRead,
  CatalogReadWorkerData,
  FromCatalogReader,
  ToCatalogReader,
} from "./catalog-read-protocol.js";
import { GraphTraversal } from "./graph-traversal.js";

const port = parentPort!;
const { path, limits } = workerData as CatalogReadWorkerData;

interface Connection {
  readonly db: Database.Database;
  readonly catalog: CatalogQueries;
  readonly graph: GraphTraversal;
}

function open(): Connection {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  applySqliteLimits(db, limits);
  return { db, catalog: new CatalogQueries(db), graph: new GraphTraversal(db) };
}

let connection = open();

function answer(read: CatalogRead): string {
  const { db, catalog, graph } = connection;
  // One read transaction per page, so the whole page is of one committed state.
  db.exec("BEGIN");
  try {
    switch (read.kind) {
      case "bulkGet":
        return catalog.bulkGet(read.tenant, read.keys);
      case "query":
        return catalog.query(read.tenant, read.request);
      case "traverse":
        return graph.traverse(read.tenant, read.request);
      case "searchHits":
        return catalog.searchHits(read.tenant, read.hits, read.full);
    }
  } finally {
    db.exec("COMMIT");
  }
}

port.on("message", (message: ToCatalogReader) => {
  if (message.type === "reopen") {
    connection.db.close();
    connection = open();
    return;
  }
  let reply: FromCatalogReader;
  try {
    reply = { id: message.id, ok: true, text: answer(message.read) };
  } catch (error) {
    reply = { id: message.id, ok: false, message: String(error) };
  }
  port.postMessage(reply);
});
