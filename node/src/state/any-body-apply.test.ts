import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Entry } from "../raft/types.js";
import { COMMAND_KINDS, type CommandKind, type RouteParams } from "../requests/command-kinds.js";
import { hashApiKey } from "./api-key.js";
import type { ApplyResult } from "./apply-result.js";
import type { StateMachine } from "./state-machine.js";
import { commandBodies, commandParams, type Held } from "./test-fixtures/odd-commands.js";
import { committed, LogBuilder, TempStates } from "./test-fixtures/state-fixtures.js";

/**
 * Every committed entry reaches every voter's apply, so a body that makes apply throw anything but a
 * command's refusal stops every voter at once (fail-stop on the same entry). The HTTP edge checks
 * bodies before proposing, but apply must not rely on it: an entry proposed by an older voter, or a
 * check the edge lacks, meets the handlers' own. Here every command kind gets bodies made from valid
 * ones with fields dropped, replaced by any JSON value (huge, negative, fractional, long, empty,
 * prototype names, nested) or added, and wholly arbitrary text, under odd route parameters, sent by a
 * tenant's principal and by the admin.
 */

interface OddCommand {
  readonly kind: CommandKind;
  readonly payload: string;
  readonly params: RouteParams;
  readonly byAdmin: boolean;
}

function oddCommands(held: Held): fc.Arbitrary<OddCommand[]> {
  const bodies = commandBodies(held);
  const params = commandParams(held);
  const command = fc.constantFrom(...(Object.keys(COMMAND_KINDS) as CommandKind[])).chain((kind) =>
    fc.record({
      kind: fc.constant(kind),
      payload: fc.oneof(
        { weight: 8, arbitrary: bodies[kind].map((body) => JSON.stringify(body) ?? "") },
        { weight: 1, arbitrary: fc.string() },
      ),
      params: fc
        .tuple(...COMMAND_KINDS[kind].map((name) => params[name]))
        .map(
          (values): RouteParams =>
            Object.fromEntries(COMMAND_KINDS[kind].map((name, i) => [name, values[i]])),
        ),
      // Admin commands mostly by the admin, the rest mostly by a tenant's writer.
      byAdmin: fc.boolean().map((flip) => flip === kind.startsWith("admin.")),
    }),
  );
  return fc.array(command, { minLength: 1, maxLength: 20 });
}

const temp = new TempStates();
const log = new LogBuilder();
/** One store applies each entry alone, the other each run's entries as one batch. */
let single: StateMachine;
let batched: StateMachine;
let held: Held;

function entryOf(command: OddCommand): Entry {
  return log.command(command.kind, command.payload, {
    params: command.params,
    ...(command.byAdmin ? { tenant: "system", principal: "admin" } : {}),
    // The stored hash a voter supplies with each new key.
    ...(command.kind === "admin.createKey" ? { keyHash: hashApiKey(`key-${log.entries.length}`) } : {}),
  });
}

/** Applies `entry` to both stores, and answers the committed result. */
function setUp(entry: Entry): Record<string, unknown> {
  batched.apply(entry);
  return committed(single.apply(entry));
}

beforeAll(() => {
  single = temp.create("single");
  batched = temp.create("batched");
  setUp(log.bootstrapAdmin());
  const admin = { tenant: "system", principal: "admin" };
  setUp(log.command("admin.putPrincipal", { principalId: "svc", tenantId: "t1", roles: ["writer"] }, admin));
  const { keyId } = setUp(
    log.command("admin.createKey", "", {
      ...admin,
      params: { principalId: "svc" },
      keyHash: hashApiKey("svc-key"),
    }),
  );
  setUp(log.command("subscription.put", { prefix: "docs/" }, { params: { name: "s1" } }));
  for (const k of ["a", "b", "docs/1", "docs/2", "docs/3"]) {
    setUp(log.command("catalog.put", { value: { k } }, { params: { key: k } }));
  }
  for (let i = 0; i < 100; i++)
    setUp(log.command("queue.enqueue", { body: { i } }, { params: { queue: "jobs" } }));
  // Held for far longer than the runs' clock moves, so the odd acks and renews meet a live lease.
  const long = { max: 100, visibilityTimeoutMs: 12 * 60 * 60 * 1000 };
  const lease = setUp(log.command("queue.lease", long, { params: { queue: "jobs" } }));
  const delivery = setUp(log.command("subscription.deliver", long, { params: { name: "s1" } }));
  const member = setUp(
    log.command(
      "membership.put",
      { status: "active", address: "10.0.0.1:1" },
      { params: { memberId: "m1" } },
    ),
  );
  held = {
    leaseToken: lease.leaseToken as string,
    messageIds: (lease.messages as { messageId: string }[]).map((m) => m.messageId),
    deliveryId: delivery.deliveryId as string,
    etag: member.etag as string,
    keyId: keyId as string,
  };
});
afterAll(() => temp.cleanup());

describe("apply of any body", () => {
  it("answers every command kind with a committed or refused outcome, the same in any batching", () => {
    fc.assert(
      fc.property(oddCommands(held), (commands) => {
        const entries = commands.map(entryOf);
        const alone: ApplyResult[] = [];
        for (const [i, entry] of entries.entries()) {
          try {
            alone.push(single.apply(entry));
          } catch (error) {
            const { kind, params, payload } = commands[i]!;
            throw new Error(
              `${kind} ${JSON.stringify(params)} ${payload.slice(0, 200)} threw: ${String(error)}; ${String((error as Error).cause)}`,
            );
          }
        }
        expect(alone.every((r) => r.type === "command")).toBe(true);
        expect(JSON.stringify(batched.applyBatch(entries))).toBe(JSON.stringify(alone));
      }),
      // The stores go on from one run to the next, so a failed run cannot be shrunk by replaying it:
      // the first counterexample is the report.
      { numRuns: 150, endOnFailure: true, seed: 20261206 },
    );
    expect(batched.dump()).toBe(single.dump());
  }, 120_000);
});
