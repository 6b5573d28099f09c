import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CommandAdmissionGovernor } from "../admission/command-admission-governor.js";
import type { Identity, ReadRequest } from "../http/voter-service.js";
import type { Entry } from "../raft/types.js";
import { CommandPayload } from "../requests/command-payload.js";
import { JsonText } from "../requests/json-text.js";
import { ADMIN_ROLES, READ_ROLES, type Role } from "../requests/roles.js";
import { generateApiKey } from "../state/api-key.js";
import type { StateMachine } from "../state/state-machine.js";
import { committed, LogBuilder, TEST_KEY_HASHER, TempStates } from "../state/test-fixtures/state-fixtures.js";
import { KeyLoadVoterService, type VoterServiceParts } from "./keyload-voter-service.js";

const BOOTSTRAP = { tenant: "system", principal: "admin", keyId: "bootstrap" };

/**
 * A voter whose state machine trails the commit: entries committed but not applied here wait in
 * `unapplied` until a read's barrier applies them, as ReadIndex does before a read goes on.
 */
class LaggingVoter {
  readonly log = new LogBuilder();
  readonly unapplied: Entry[] = [];
  readonly service: KeyLoadVoterService;

  constructor(readonly sm: StateMachine) {
    const driver = {
      readBarrier: async () => {
        this.sm.applyBatch(this.unapplied.splice(0));
      },
    };
    this.service = new KeyLoadVoterService({
      driver,
      stateMachine: sm,
      keyHasher: TEST_KEY_HASHER,
    } as unknown as VoterServiceParts);
  }

  apply(...args: Parameters<LogBuilder["command"]>): Record<string, unknown> {
    return committed(this.sm.apply(this.log.command(...args)));
  }

  commitOnly(...args: Parameters<LogBuilder["command"]>): void {
    this.unapplied.push(this.log.command(...args));
  }

  read(identity: Identity, roles: readonly Role[], request: Partial<ReadRequest> = {}): Promise<unknown> {
    return this.service.read({
      kind: "catalog.get",
      params: { key: "doc" },
      body: undefined,
      query: {},
      identity,
      roles,
      signal: new AbortController().signal,
      ...request,
    });
  }
}

let temp: TempStates;
let voter: LaggingVoter;
let apiKey: string;

beforeEach(() => {
  temp = new TempStates();
  voter = new LaggingVoter(temp.create("voter"));
  committed(voter.sm.apply(voter.log.bootstrapAdmin()));
  voter.apply("admin.putPrincipal", { principalId: "svc", tenantId: "t1", roles: ["admin"] }, BOOTSTRAP);
  apiKey = generateApiKey();
  const { keyId } = voter.apply("admin.createKey", "", {
    ...BOOTSTRAP,
    params: { principalId: "svc" },
    keyHash: TEST_KEY_HASHER.hash(apiKey),
  });
  voter.apply(
    "catalog.put",
    { value: "v" },
    { tenant: "t1", principal: "svc", keyId: String(keyId), params: { key: "doc" } },
  );
});
afterEach(() => temp.cleanup());

/** What the edge verified, on this voter's catalog as it stood. */
function verified(): Identity {
  const identity = voter.service.authenticate(apiKey);
  if (identity === null) throw new Error("the key did not verify");
  return identity;
}

describe("reads authorized again after the read barrier", () => {
  it("answers a read whose key and role still hold", async () => {
    // A document is answered as its stored JSON text, never parsed on the event loop.
    const answer = await voter.read(verified(), READ_ROLES);
    expect(answer).toBeInstanceOf(JsonText);
    expect(JSON.parse((answer as JsonText).text)).toEqual({ key: "doc", value: "v", version: 1 });
  });

  it("refuses a read by a key whose revoke committed before the read but was not applied at the edge", async () => {
    const identity = verified();
    voter.commitOnly("admin.deleteKey", "", {
      ...BOOTSTRAP,
      params: { principalId: "svc", keyId: identity.keyId },
    });
    await expect(voter.read(identity, READ_ROLES)).rejects.toMatchObject({
      code: "Unauthenticated",
      reason: "InvalidCredentials",
    });
    // The barrier applied the revoke: the edge now refuses the key itself.
    expect(voter.service.authenticate(apiKey)).toBeNull();
  });

  it("refuses a read whose principal lost every role the route needs", async () => {
    const identity = verified();
    voter.commitOnly(
      "admin.putPrincipal",
      { principalId: "svc", tenantId: "t1", roles: ["reader"] },
      BOOTSTRAP,
    );
    await expect(
      voter.read(identity, ADMIN_ROLES, { kind: "admin.admissionStatus", params: {} }),
    ).rejects.toMatchObject({
      code: "PermissionDenied",
      reason: "MissingRole",
    });
    await expect(voter.read(identity, READ_ROLES)).resolves.toBeInstanceOf(JsonText);
  });
});

describe("commands", () => {
  it("carry the key that authenticated them, for the state machine to check again at apply", async () => {
    const submitted: unknown[] = [];
    const service = new KeyLoadVoterService({
      commandGovernor: { tryAdmit: () => ({}) },
      scheduler: {
        submit: async (_reservation: unknown, command: unknown) => {
          submitted.push(command);
          return { ok: true, value: { index: 9, duplicate: false, result: {} } };
        },
      },
    } as unknown as VoterServiceParts);
    await service.submitCommand({
      kind: "catalog.put",
      params: { key: "k" },
      payload: CommandPayload.fromText('{"value":1}'),
      commandId: "c1",
      identity: verified(),
      lane: "data",
      signal: new AbortController().signal,
    });
    expect(submitted).toEqual([
      expect.objectContaining({ tenant: "t1", principal: "svc", keyId: verified().keyId }),
    ]);
  });

  it("release the reservation of a command that fails before it is submitted", async () => {
    const governor = new CommandAdmissionGovernor();
    const failure = new Error("no entropy");
    const service = new KeyLoadVoterService({
      commandGovernor: governor,
      keyHasher: {
        hash: () => {
          throw failure;
        },
      },
      scheduler: { submit: () => Promise.reject(new Error("never submitted")) },
    } as unknown as VoterServiceParts);
    const created = service.submitCommand({
      kind: "admin.createKey",
      params: { principalId: "svc" },
      payload: CommandPayload.EMPTY,
      commandId: "c2",
      identity: verified(),
      lane: "data",
      signal: new AbortController().signal,
    });
    await expect(created).rejects.toBe(failure);
    expect(governor.usage("data")).toMatchObject({ commands: 0, retainedBytes: 0 });
  });
});
