import { SeededRandom } from "../../raft/seeded-random.js";
import type { Entry } from "../../raft/types.js";
import type { CommandKind, RouteParams } from "../../requests/command-kinds.js";
import { hashApiKey } from "../api-key.js";
import type { ApplyResult } from "../apply-result.js";
import { BOOTSTRAP_ADMIN_COMMAND_ID, bootstrapAdminCommand } from "../bootstrap-admin-command.js";
import { type EntryKind, encodeCommand } from "../command-envelope.js";
import { SYSTEM_SUBMITTER } from "../principals.js";
import { ADMIN_KEY_HASH } from "./state-fixtures.js";

interface Planned {
  readonly kind: EntryKind;
  readonly tenant: string;
  readonly principal: string;
  readonly keyId?: string;
  readonly params: RouteParams;
  readonly payload: string;
}

interface Sent extends Planned {
  readonly commandId: string;
}

const TENANTS = ["t1", "t2", "t3"];
const KEYS = ["a", "a/b", "a/c", "b", "b/x", "c", "users/1", "users/2", "users/3", "z"];
const WORDS = ["alpha", "beta", "gamma", "delta", "omega", "kappa"];
const QUEUES = ["jobs", "mail", "jobs.dead-letter"];
const STATUSES = ["created", "joining", "active", "shuttingDown", "dead", "bogus"];

/**
 * A random but reproducible Raft log over every command kind, opening with the bootstrap admin for
 * ADMIN_KEY_HASH as a new cluster's leader proposes it: valid and invalid bodies, retries and
 * conflicting reuses of command IDs, noops, malformed envelopes, a leader clock that sometimes jumps
 * back, and commands sent by keys the log created, some revoked or demoted since. Each entry is applied to `oracle` as it is generated, and what it answers (lease tokens, leased
 * messages, delivery IDs, etags, key IDs) shapes later commands, so acks and conditional writes mostly
 * hit and sometimes miss on purpose. The same seed and oracle limits give the same log.
 */
export function randomLog(seed: number, count: number, oracle: (entry: Entry) => ApplyResult): Entry[] {
  const random = new SeededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[random.nextInt(items.length)]!;
  const recent = <T>(items: readonly T[], window: number): T | undefined =>
    items.length === 0 ? undefined : items[items.length - 1 - random.nextInt(Math.min(window, items.length))];
  const json = (value: unknown): string => JSON.stringify(value);

  const entries: Entry[] = [];
  const sent: Sent[] = [];
  const leased: { tenant: string; queue: string; messageId: string; token: string }[] = [];
  const deliveries: { tenant: string; name: string; deliveryId: string }[] = [];
  const members: { tenant: string; memberId: string; etag: string; tableVersion: number }[] = [];
  const apiKeys: { tenant: string; principalId: string; keyId: string }[] = [
    { tenant: "system", principalId: "admin", keyId: "bootstrap" },
  ];
  const principalTenants = new Map([["admin", "system"]]);
  const admins: { tenant: string; principalId: string }[] = [{ tenant: "system", principalId: "admin" }];
  let nowMs = 1_700_000_000_000;
  let monotonicMs = 0;
  let term = 1;

  const someValue = (): unknown => {
    switch (random.nextInt(5)) {
      case 0:
        return random.nextInt(100);
      case 1:
        return { text: `${pick(WORDS)} ${pick(WORDS)}`, n: random.nextInt(10), ok: random.chance(0.5) };
      case 2:
        return [pick(WORDS), random.nextInt(5), null];
      case 3:
        return pick(WORDS);
      default:
        return { nested: { deeper: { text: pick(WORDS) } }, tags: [pick(WORDS)] };
    }
  };
  const someOperation = (): unknown => {
    const key = pick(KEYS);
    switch (random.nextInt(4)) {
      case 0:
        return { op: "put", key, value: someValue() };
      case 1:
        return { op: "put", key, value: someValue(), expectedVersion: random.nextInt(4) };
      case 2:
        return { op: "delete", key, ...(random.chance(0.5) ? { expectedVersion: random.nextInt(4) } : {}) };
      default:
        return { op: "check", key, version: random.nextInt(3) };
    }
  };
  const writeSet = (maxOperations: number): { operations: unknown[]; outbox: unknown[] } => ({
    operations: Array.from({ length: random.nextInt(maxOperations + 1) }, someOperation),
    outbox: Array.from({ length: random.nextInt(3) }, () => ({
      queue: pick(QUEUES),
      body: someValue(),
      delayMs: random.nextInt(3) * 500,
    })),
  });

  const plan = (): Planned => {
    const tenant = pick(TENANTS);
    if (random.chance(0.004)) {
      // The bootstrap admin proposed again, with another voter's key: by the system, which changes
      // nothing now, or claimed by a principal of a tenant (refused).
      const system = random.chance(0.7);
      return {
        kind: "system.bootstrapAdmin",
        tenant: system ? "system" : tenant,
        principal: system ? SYSTEM_SUBMITTER : "p1",
        params: {},
        payload: "",
      };
    }
    const data = (kind: CommandKind, params: RouteParams, payload: string): Planned => ({
      kind,
      tenant,
      principal: "p1",
      params,
      payload,
    });
    const roll = random.nextInt(100);
    if (roll < 20) {
      const body = random.chance(0.08)
        ? "{not json"
        : json({ value: someValue(), ...(random.chance(0.3) ? { expectedVersion: random.nextInt(4) } : {}) });
      return data("catalog.put", { key: pick(KEYS) }, body);
    }
    if (roll < 25) {
      const body = random.chance(0.5) ? "" : json({ expectedVersion: random.nextInt(4) });
      return data("catalog.delete", { key: pick(KEYS) }, body);
    }
    if (roll < 32) return data("transaction", {}, json(writeSet(3)));
    if (roll < 37) {
      const edge = { from: pick(KEYS), type: pick(["knows", "owns"]), to: pick(KEYS) };
      return data(random.chance(0.7) ? "graph.putEdge" : "graph.deleteEdge", {}, json(edge));
    }
    if (roll < 45) {
      const body = { body: someValue(), delayMs: random.nextInt(3) * 1000 };
      return data("queue.enqueue", { queue: pick(QUEUES) }, json(body));
    }
    if (roll < 51) {
      const body = { max: 1 + random.nextInt(4), visibilityTimeoutMs: 3000 + random.nextInt(4) * 2000 };
      return data("queue.lease", { queue: pick(QUEUES) }, json(body));
    }
    if (roll < 61) {
      const held = recent(leased, 4);
      if (held === undefined) return data("queue.lease", { queue: pick(QUEUES) }, "");
      const kind = pick<CommandKind>(["queue.ack", "queue.nack", "queue.renew", "queue.complete"]);
      const leaseToken = random.chance(0.85) ? held.token : "not-the-token";
      const body =
        kind === "queue.complete"
          ? { leaseToken, ...writeSet(2) }
          : { leaseToken, delayMs: random.nextInt(2) * 1000, visibilityTimeoutMs: 2000 };
      return {
        ...data(kind, { queue: held.queue, messageId: held.messageId }, json(body)),
        tenant: held.tenant,
      };
    }
    if (roll < 64) {
      const body = { prefix: pick(["", "a", "users/"]), ...(random.chance(0.2) ? { from: "end" } : {}) };
      return data("subscription.put", { name: pick(["s1", "s2"]) }, json(body));
    }
    if (roll < 70) {
      const body = { max: 1 + random.nextInt(4), visibilityTimeoutMs: 2000 + random.nextInt(3) * 1000 };
      return data("subscription.deliver", { name: pick(["s1", "s2"]) }, json(body));
    }
    if (roll < 76) {
      const delivery = recent(deliveries, 3);
      if (delivery === undefined) return data("subscription.deliver", { name: "s1" }, "");
      const deliveryId = random.chance(0.9) ? delivery.deliveryId : "stale";
      const params = { name: delivery.name, deliveryId };
      const complete = random.chance(0.5);
      const payload = complete ? json({ operations: writeSet(2).operations }) : "";
      return {
        ...data(complete ? "subscription.complete" : "subscription.ack", params, payload),
        tenant: delivery.tenant,
      };
    }
    if (roll < 82) {
      const row = random.chance(0.7) ? recent(members, 4) : undefined;
      const memberTenant = row?.tenant ?? tenant;
      const memberId = row?.memberId ?? pick(["silo-1", "silo-2"]);
      if (random.chance(0.15)) {
        return { ...data("membership.put", { memberId }, json({ iAmAlive: true })), tenant: memberTenant };
      }
      const body = {
        status: pick(STATUSES),
        address: `10.0.0.${random.nextInt(3)}:11111`,
        ...(row !== undefined && random.chance(0.85) ? { etag: row.etag } : {}),
        ...(row !== undefined && random.chance(0.3)
          ? { tableVersion: row.tableVersion + random.nextInt(2) }
          : {}),
      };
      return { ...data("membership.put", { memberId }, json(body)), tenant: memberTenant };
    }
    if (roll < 89) {
      const body = random.chance(0.1)
        ? json({ data: 1 })
        : json({ directive: pick(["drain", "rebalance"]), data: someValue() });
      return data("dispatch.append", { channel: pick(["control", "ops"]) }, body);
    }
    // The principal catalog, by an admin (of system or of a tenant) or now and then by a non-admin.
    const actor = random.chance(0.9) ? pick(admins) : { tenant, principalId: "p1" };
    const admin = (kind: CommandKind, params: RouteParams, payload: string): Planned => ({
      kind,
      tenant: actor.tenant,
      principal: actor.principalId,
      params,
      payload,
    });
    const principalId = pick(["svc-a", "svc-b", "ops", "admin"]);
    if (roll < 94) {
      const roles = random.chance(0.9) ? [pick(["writer", "reader", "admin"])] : ["root"];
      return admin("admin.putPrincipal", {}, json({ principalId, tenantId: pick(TENANTS), roles }));
    }
    const key = recent(apiKeys, 4);
    if (roll < 97 || key === undefined) return admin("admin.createKey", { principalId }, "");
    return admin("admin.deleteKey", { principalId: key.principalId, keyId: key.keyId }, "");
  };

  // Now and then sent by a key, as a voter sends every command: mostly by a principal of the command's
  // tenant, whose key or role an earlier entry may have taken away; rarely naming another principal.
  const withKey = (planned: Planned): Planned => {
    const key = random.chance(0.3) ? recent(apiKeys, 8) : undefined;
    if (key === undefined) return planned;
    if (principalTenants.get(key.principalId) === planned.tenant) {
      return { ...planned, principal: key.principalId, keyId: key.keyId };
    }
    return random.chance(0.1) ? { ...planned, keyId: key.keyId } : planned;
  };

  const learn = (planned: Planned, result: ApplyResult): void => {
    if (result.type !== "command" || result.outcome.status !== "committed" || result.duplicate) return;
    const r = result.outcome.result as Record<string, unknown>;
    const tenant = planned.tenant;
    if (planned.kind === "queue.lease" && typeof r.leaseToken === "string") {
      for (const message of r.messages as { messageId: string }[]) {
        leased.push({ tenant, queue: r.queue as string, messageId: message.messageId, token: r.leaseToken });
      }
    } else if (planned.kind === "subscription.deliver" && typeof r.deliveryId === "string") {
      deliveries.push({ tenant, name: r.name as string, deliveryId: r.deliveryId });
    } else if (planned.kind === "membership.put") {
      members.push({
        tenant,
        memberId: r.memberId as string,
        etag: r.etag as string,
        tableVersion: r.tableVersion as number,
      });
    } else if (planned.kind === "admin.createKey") {
      apiKeys.push({ tenant, principalId: r.principalId as string, keyId: r.keyId as string });
    } else if (planned.kind === "admin.putPrincipal") {
      principalTenants.set(r.principalId as string, r.tenantId as string);
      if ((r.roles as string[]).includes("admin")) {
        admins.push({ tenant: r.tenantId as string, principalId: r.principalId as string });
      }
    }
  };

  const bootstrap = bootstrapAdminCommand(ADMIN_KEY_HASH, { timestampMs: nowMs, monotonicMs });
  entries.push({ index: 1, term, type: "normal", data: encodeCommand(bootstrap) });
  oracle(entries[0]!);

  while (entries.length < count) {
    const index = entries.length + 1;
    if (random.chance(0.01)) term++;
    let entry: Entry;
    let planned: Planned | undefined;
    if (random.chance(0.02)) {
      entry = { index, term, type: "noop", data: new Uint8Array(0) };
    } else if (random.chance(0.004)) {
      entry = { index, term, type: "normal", data: new TextEncoder().encode("garbage") };
    } else {
      // Mostly forward, now and then a lease's worth of time, rarely a step back (a new leader's clock).
      const step = random.chance(0.05) ? 5000 : random.chance(0.02) ? -3000 : random.nextInt(400);
      nowMs += step;
      // A step back is the wall clock's alone: the monotonic clock never runs backwards.
      monotonicMs += Math.max(0, step);
      const retry = sent.length > 0 && random.chance(0.06) ? recent(sent, 60) : undefined;
      let command: Sent;
      if (retry !== undefined) {
        // The same ID again: mostly a retry of the same command, sometimes another body (a conflict).
        command = random.chance(0.7) ? retry : { ...retry, payload: `${retry.payload} ` };
      } else {
        const fresh = withKey(plan());
        const bootstrapId = fresh.kind === "system.bootstrapAdmin" && random.chance(0.5);
        command = { ...fresh, commandId: bootstrapId ? BOOTSTRAP_ADMIN_COMMAND_ID : `c${index}` };
        sent.push(command);
      }
      planned = command;
      const data = encodeCommand({
        commandId: command.commandId,
        kind: command.kind,
        tenant: command.tenant,
        principal: command.principal,
        ...(command.keyId === undefined ? {} : { keyId: command.keyId }),
        timestampMs: nowMs,
        monotonicMs,
        params: command.params,
        ...(command.kind === "admin.createKey" ? { generated: { keyHash: hashApiKey(`key-${index}`) } } : {}),
        ...(command.kind === "system.bootstrapAdmin"
          ? { generated: { keyHash: hashApiKey(`another-admin-key-${random.nextInt(3)}`) } }
          : {}),
        payload: command.payload,
      });
      entry = { index, term, type: "normal", data };
    }
    entries.push(entry);
    const result = oracle(entry);
    if (planned !== undefined) learn(planned, result);
  }
  return entries;
}
