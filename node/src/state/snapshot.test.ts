import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseSearchRequest } from "./search-query.js";
import { json, type SearchPage } from "./test-fixtures/read-pages.js";
import { Harness, TempStates } from "./test-fixtures/state-fixtures.js";

let temp: TempStates;
beforeEach(() => {
  temp = new TempStates();
});
afterEach(() => temp.cleanup());

/** The nice value of each thread of this process, by thread ID (Linux). */
function threadNices(): Map<number, number> {
  const nices = new Map<number, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
    // Fields after the command name, which is in parentheses: state is field 3, nice field 19.
    nices.set(Number(tid), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]));
  }
  return nices;
}

describe("snapshots", () => {
  // Thread priorities are lowered on Linux only (elsewhere lowerThreadPriority does nothing); on Linux
  // the test always runs, so a missing /proc/thread-self fails it rather than skipping it.
  it.skipIf(process.platform !== "linux")(
    "copies on a thread that yields the CPU to the voter's own threads (Linux)",
    async () => {
      const before = threadNices();
      const main = before.get(process.pid)!;
      const h = new Harness(temp.create("nice"));
      h.ok("catalog.put", { value: 1 }, { params: { key: "k" } });
      await h.sm.createSnapshot(temp.path("nice-snap.db"));
      // The worker stays for the next snapshot: it is the one new thread at nice + 10.
      const niced = [...threadNices()].filter(
        ([tid, nice]) => !before.has(tid) && nice === Math.min(19, main + 10),
      );
      expect(niced).toHaveLength(1);
      expect(threadNices().get(process.pid)).toBe(main);
    },
  );

  it("covers the position read from the copy itself, while applies go on during the backup", async () => {
    const h = new Harness(temp.create("source"));
    for (let i = 0; i < 2_000; i++)
      h.ok("catalog.put", { value: "x".repeat(500) }, { params: { key: `k${i}` } });
    const pending = h.sm.createSnapshot(temp.path("snap.db"));
    h.ok("catalog.put", { value: "during" }, { params: { key: "late" } });
    const covered = await pending;
    expect(covered.index).toBeGreaterThanOrEqual(2_000);
    const copy = new Database(temp.path("snap.db"), { readonly: true });
    const meta = copy.prepare("SELECT applied_index AS applied FROM meta").get() as { applied: number };
    const late = copy.prepare("SELECT count(*) AS n FROM documents WHERE key = 'late'").get() as {
      n: number;
    };
    copy.close();
    expect(meta.applied).toBe(covered.index);
    expect(late.n).toBe(covered.index === 2_001 ? 1 : 0);
    // One self-contained file, which read-only opens (this one, the worker's check, a follower's
    // install) leave nothing beside.
    expect(readdirSync(temp.path("")).filter((name) => name.startsWith("snap.db"))).toEqual(["snap.db"]);
  });

  it("finishes a copy of many backup steps while another connection commits between the steps", async () => {
    const h = new Harness(temp.create("big"));
    for (let i = 0; i < 10_000; i++)
      h.ok("catalog.put", { value: "x".repeat(1_000) }, { params: { key: `k${i}` } });
    let done = false;
    // Commits the transaction the applies left open, so the writer below is not locked out.
    const pending = h.sm.createSnapshot(temp.path("big-snap.db")).finally(() => {
      done = true;
    });
    pending.catch(() => undefined);
    const writer = new Database(temp.path("big.db"));
    writer.exec("CREATE TABLE churn (n INTEGER)");
    const churn = writer.prepare("INSERT INTO churn VALUES (?)");
    // SQLite restarts a backup whenever another connection commits between two of its steps, so
    // without the read transaction the worker holds across them this copy never finishes.
    // Generous for a loaded machine: the copy takes ~0.2 s here.
    const deadline = performance.now() + 10_000;
    let commits = 0;
    while (!done && performance.now() < deadline) {
      churn.run(commits++);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    writer.close();
    expect(done).toBe(true);
    const covered = await pending;
    const copy = new Database(temp.path("big-snap.db"), { readonly: true });
    const bytes =
      (copy.pragma("page_count", { simple: true }) as number) *
      (copy.pragma("page_size", { simple: true }) as number);
    const meta = copy.prepare("SELECT applied_index AS applied FROM meta").get() as { applied: number };
    // The copy may have begun before the table existed.
    const hasChurn = copy.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'churn'").pluck().get();
    const copied = hasChurn === 1 ? (copy.prepare("SELECT count(*) FROM churn").pluck().get() as number) : 0;
    copy.close();
    // More than four of the worker's 2 MiB steps.
    expect(bytes).toBeGreaterThan(4 * 2 * 1024 * 1024);
    expect(commits).toBeGreaterThan(copied);
    expect(meta.applied).toBe(covered.index);
  }, 30_000);

  it("refuses a file that is not a state snapshot and keeps the old state usable", async () => {
    const h = new Harness(temp.create("s"));
    h.ok("catalog.put", { value: 1 }, { params: { key: "k" } });
    writeFileSync(temp.path("junk.db"), "definitely not sqlite".repeat(100));
    expect(() => h.sm.restoreFromSnapshot(temp.path("junk.db"))).toThrow(
      expect.objectContaining({ reason: "InvalidSnapshot" }),
    );
    expect(() => h.sm.restoreFromSnapshot(temp.path("absent.db"))).toThrow(
      expect.objectContaining({ reason: "InvalidSnapshot" }),
    );
    const other = new Database(temp.path("other.db"));
    other.exec("CREATE TABLE t (x)");
    other.close();
    expect(() => h.sm.restoreFromSnapshot(temp.path("other.db"))).toThrow(
      expect.objectContaining({ reason: "InvalidSnapshot" }),
    );
    expect(h.sm.getDocument("t1", "k")?.value).toBe(1);
    h.ok("catalog.put", { value: 2 }, { params: { key: "k" } });
  });

  it("installs a snapshot of the schema before, migrating it, and refuses one it cannot read", async () => {
    const source = new Harness(temp.create("source"));
    source.ok("queue.enqueue", { body: "kept" }, { params: { queue: "jobs" } });
    await source.sm.createSnapshot(temp.path("snap.db"));
    // As a voter of the version before wrote it (schema 3 kept its key hashes unkeyed; it holds none).
    const old = new Database(temp.path("snap.db"));
    old.exec("UPDATE meta SET schema_version = 3");
    old.close();
    const target = new Harness(temp.create("target"));
    // The source applied one entry: the target's log continues at index 2.
    target.ok("catalog.put", { value: 1 }, { params: { key: "k" } });
    target.sm.restoreFromSnapshot(temp.path("snap.db"));
    const lease = target.ok<{ messages: { body: unknown }[] }>(
      "queue.lease",
      {},
      { params: { queue: "jobs" }, commandId: "l1" },
    );
    expect(lease.messages.map((m) => m.body)).toEqual(["kept"]);

    const future = new Database(temp.path("snap.db"));
    future.exec("UPDATE meta SET schema_version = 99");
    future.close();
    expect(() => target.sm.restoreFromSnapshot(temp.path("snap.db"))).toThrow(
      expect.objectContaining({ reason: "InvalidSnapshot" }),
    );
  });

  it("stops the voter when its own copy fails the page check: its applied state is damaged", async () => {
    const source = new Harness(temp.create("source"));
    for (let i = 0; i < 500; i++)
      source.ok("catalog.put", { value: "x".repeat(500) }, { params: { key: `k${i}` } });
    await source.sm.close();
    // A page in the middle of the documents goes bad on the disk, where no read of the voter's own
    // looks: the meta table, on an early page, still reads.
    damageMiddlePage(temp.path("source.db"));
    const damaged = temp.create("source");
    const failures: unknown[] = [];
    damaged.onFailure((err) => failures.push(err));
    // Sent on, the copy would pass its checksum and break every follower that installs it.
    await expect(damaged.createSnapshot(temp.path("copy.db"))).rejects.toMatchObject({
      reason: "CorruptState",
    });
    expect(failures).toEqual([expect.objectContaining({ reason: "CorruptState" })]);
  });

  it("refuses to install a snapshot whose pages fail the check, and keeps the old state", async () => {
    const h = new Harness(temp.create("source"));
    for (let i = 0; i < 500; i++)
      h.ok("catalog.put", { value: "x".repeat(500) }, { params: { key: `k${i}` } });
    await h.sm.createSnapshot(temp.path("snap.db"));
    damageMiddlePage(temp.path("snap.db"));
    const target = new Harness(temp.create("target"));
    target.ok("catalog.put", { value: 1 }, { params: { key: "k" } });
    expect(() => target.sm.restoreFromSnapshot(temp.path("snap.db"))).toThrow(
      expect.objectContaining({ reason: "InvalidSnapshot" }),
    );
    expect(target.sm.getDocument("t1", "k")?.value).toBe(1);
  });

  it("rebuilds the search index from an installed snapshot", async () => {
    const source = new Harness(temp.create("source"));
    source.ok("catalog.put", { value: "snapshot words" }, { params: { key: "a" } });
    await source.sm.createSnapshot(temp.path("snap.db"));
    const target = new Harness(temp.create("target"));
    target.ok("catalog.put", { value: "local words" }, { params: { key: "b" } });
    target.sm.restoreFromSnapshot(temp.path("snap.db"));
    const words = parseSearchRequest({ query: "words" });
    const keys = async () =>
      (await json<SearchPage>(target.sm.search("t1", words))).hits.map((hit) => hit.key);
    expect(await keys()).toEqual(["a"]);
    // The source had applied one entry too, so the target's log continues at index 2.
    target.ok("catalog.put", { value: "more words" }, { params: { key: "c" } });
    expect((await keys()).sort()).toEqual(["a", "c"]);
  });
});

/** Overwrites the start of a page in the middle of a state database file. */
function damageMiddlePage(path: string): void {
  const bytes = readFileSync(path);
  const page = 16 * 1024 * Math.floor(bytes.length / (16 * 1024) / 2);
  bytes.fill(0xa5, page, page + 64);
  writeFileSync(path, bytes);
}
