import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../config/config-error.js";
import { decodeConfChange } from "../raft/conf-change.js";
import { DurableLogStore } from "../storage/durable-log-store.js";
import { StorageFailedError } from "../storage/storage-errors.js";
import { MemberIdentity } from "./member-identity.js";

const VOTERS = ["voter1", "voter2", "voter3"];
const silent = pino({ level: "silent" });
let dir: string | undefined;
const stores: DurableLogStore[] = [];

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function openStore(): DurableLogStore {
  dir ??= mkdtempSync(join(tmpdir(), "keyload-identity-"));
  const store = DurableLogStore.open(dir, { conf: { voters: [] } });
  stores.push(store);
  return store;
}

async function reopen(): Promise<DurableLogStore> {
  await stores.pop()!.close();
  return openStore();
}

/** voter1's identity, bootstrapping cluster c1 on `store`. */
function bootstrap(store: DurableLogStore): Promise<MemberIdentity> {
  return MemberIdentity.open(dir!, "voter1", store, { clusterId: "c1", voters: VOTERS }, silent);
}

describe("MemberIdentity", () => {
  it("bootstraps an empty store when told to: the configuration as its first entry, durable", async () => {
    const store = openStore();
    const identity = await bootstrap(store);
    expect(identity).toMatchObject({ memberId: "voter1" });
    expect(identity.current()).toBe("c1");
    const reopened = await reopen();
    expect(reopened.initialState().hardState).toEqual({ term: 1, vote: null, commit: 1 });
    const [first] = reopened.entries(1, 2, Number.POSITIVE_INFINITY);
    expect(first).toMatchObject({ index: 1, term: 1, type: "conf" });
    expect(decodeConfChange(first!.data)).toEqual({ type: "bootstrap", voters: VOTERS });
  });

  it("joins as a new incarnation when not told to bootstrap, and keeps it across restarts", async () => {
    const store = openStore();
    const identity = await MemberIdentity.open(dir!, "voter2", store, null, silent);
    expect(identity.memberId).toMatch(/^voter2~[0-9a-f]{8}$/);
    expect(identity.current()).toBeNull();
    expect(store.lastIndex()).toBe(0);
    // Asked to bootstrap before it has received anything: the operator meant to bootstrap, and is told.
    await expect(
      MemberIdentity.open(dir!, "voter2", await reopen(), { clusterId: "c1", voters: VOTERS }, silent),
    ).rejects.toMatchObject({
      key: "KeyLoad:Cluster:BootstrapId",
      message: /was made to join a cluster as new member voter2~/,
    });
    identity.adopt("c9");
    const again = await MemberIdentity.open(dir!, "voter2", await reopen(), null, silent);
    expect(again.memberId).toBe(identity.memberId);
    expect(again.current()).toBe("c9");
    expect(again.own.incarnation).toBe(identity.own.incarnation);
    expect(JSON.parse(readFileSync(join(dir!, "member.json"), "utf8"))).toEqual({
      clusterId: "c9",
      memberId: identity.memberId,
      incarnation: identity.own.incarnation,
      peers: {},
    });
  });

  it("makes an incarnation with its storage and keeps the ones it saw of its peers", async () => {
    const identity = await bootstrap(openStore());
    expect(identity.own.incarnation).toMatch(/^[0-9a-f]{16}$/);
    expect(identity.seen("voter2")).toBeUndefined();
    identity.record("voter2", "0123");
    const again = await bootstrap(await reopen());
    expect(again.own.incarnation).toBe(identity.own.incarnation);
    expect(again.seen("voter2")).toBe("0123");
    expect(again.seen("toString")).toBeUndefined();
    // Storage lost and bootstrapped again: another incarnation, which has seen no one.
    await stores.pop()!.close();
    rmSync(dir!, { recursive: true, force: true });
    dir = undefined;
    const remade = await bootstrap(openStore());
    expect(remade.memberId).toBe("voter1");
    expect(remade.own.incarnation).not.toBe(identity.own.incarnation);
    expect(remade.seen("voter2")).toBeUndefined();
  });

  it("holds a peer's incarnation only once it is durable, and stops at a failed write", async () => {
    const identity = await bootstrap(openStore());
    const failures: Error[] = [];
    identity.onFailure((err) => failures.push(err));
    // The write's temporary file cannot be made: the write fails as on a full or failing disk.
    mkdirSync(join(dir!, "member.json.tmp"));
    expect(() => identity.record("voter2", "0123")).toThrow(StorageFailedError);
    // Accepted in memory, it would let that incarnation in until a restart forgot it.
    expect(identity.seen("voter2")).toBeUndefined();
    expect(failures).toHaveLength(1);
    rmSync(join(dir!, "member.json.tmp"), { recursive: true });
    expect(() => identity.adopt("c2")).toThrow(StorageFailedError);
    expect(identity.current()).toBe("c1");
  });

  it("gives an identity kept before incarnations were one, kept from then on", async () => {
    await bootstrap(openStore());
    writeFileSync(join(dir!, "member.json"), `${JSON.stringify({ clusterId: "c1", memberId: "voter1" })}\n`);
    const identity = await bootstrap(await reopen());
    expect(identity.own.incarnation).toMatch(/^[0-9a-f]{16}$/);
    const again = await bootstrap(await reopen());
    expect(again.own.incarnation).toBe(identity.own.incarnation);
  });

  it("ignores the bootstrap ID of its own cluster once bootstrapped, and refuses another's", async () => {
    const identity = await bootstrap(openStore());
    expect((await bootstrap(await reopen())).own.incarnation).toBe(identity.own.incarnation);
    const other = MemberIdentity.open(
      dir!,
      "voter1",
      await reopen(),
      { clusterId: "c2", voters: VOTERS },
      silent,
    );
    await expect(other).rejects.toBeInstanceOf(ConfigError);
    await expect(other).rejects.toMatchObject({
      key: "KeyLoad:Cluster:BootstrapId",
      message: /holds member voter1 of cluster c1/,
    });
  });

  it("refuses another voter's data dir: its kept identity names that voter", async () => {
    const store = openStore();
    const identity = await bootstrap(store);
    expect(identity.memberId).toBe("voter1");
    const opened = MemberIdentity.open(dir!, "voter2", await reopen(), null, silent);
    await expect(opened).rejects.toBeInstanceOf(ConfigError);
    await expect(opened).rejects.toMatchObject({ key: "KeyLoad:Node:Id", message: /holds member voter1/ });
    // Its own later incarnation's is its own.
    const joined = await MemberIdentity.open(dir!, "voter1", await reopen(), null, silent);
    expect(joined.memberId).toBe("voter1");
  });

  it("takes a store that holds data without a kept identity as its name's first incarnation", async () => {
    const store = openStore();
    store.commit([
      { kind: "persist", snapshot: null, entries: [], hardState: { term: 3, vote: "voter1", commit: 0 } },
    ]);
    await store.sync();
    const identity = await MemberIdentity.open(
      dir!,
      "voter3",
      store,
      { clusterId: "c1", voters: VOTERS },
      silent,
    );
    expect(identity.memberId).toBe("voter3");
    expect(identity.current()).toBeNull();
    expect(store.lastIndex()).toBe(0);
  });
});
