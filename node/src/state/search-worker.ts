/**
 * The search index worker's entry point. It owns the index database and handles changes and queries in
 * the order they arrive, so a query sees every change sent before it.
 */
import { parentPort, workerData } from "node:worker_threads";
import { SearchIndexStore } from "./search-index-store.js";
import type { FromSearchWorker, SearchWorkerData, ToSearchWorker } from "./search-protocol.js";

const port = parentPort!;
const data = workerData as SearchWorkerData;
const progress = new Int32Array(data.progress);
const store = SearchIndexStore.open(data.path, data.limits);

function send(message: FromSearchWorker): void {
  port.postMessage(message);
}

function handle(message: ToSearchWorker): void {
  switch (message.type) {
    case "changes":
      try {
        store.applyChanges(message.changes, message.through);
      } finally {
        // Counted even when it failed, so the applying thread never waits on changes that will not come.
        Atomics.add(progress, 0, message.changes.length);
        Atomics.notify(progress, 0);
      }
      return;
    case "reset":
      store.reset(message.through, message.tenants);
      return;
    case "complete":
      store.markComplete();
      return;
    case "beginTenant":
      store.beginTenant(message.tenant, message.token);
      return;
    case "endTenant":
      store.endTenant(message.tenant);
      return;
    case "query":
      try {
        send({
          type: "hits",
          id: message.id,
          hits: store.query(
            message.token,
            message.match,
            message.low,
            message.high,
            message.limit,
            message.after,
          ),
        });
      } catch (error) {
        send({ type: "failed", id: message.id, message: String(error) });
      }
      return;
    case "close":
      store.close();
      port.close();
      return;
  }
}

send({ type: "opened", ...store.status() });
port.on("message", (message: ToSearchWorker) => {
  try {
    handle(message);
  } catch (error) {
    // The index no longer follows the documents: have the next start rebuild it, and stop using it.
    try {
      store.markIncomplete();
    } finally {
      send({ type: "failed", id: null, message: String(error) });
    }
  }
});
