import { Registry } from "prom-client";
import type { CommandStageObserver } from "../../admission/index.js";
import type {
  ClusterChangeRequest,
  CommandAnswer,
  CommandSubmission,
  HealthReport,
  Identity,
  LeaderHint,
  ReadRequest,
  VoterService,
} from "../voter-service.js";

/** API keys the fake knows, by the plain key (tests only: a real voter keeps hashes). */
export const KEYS = {
  admin: {
    key: "kl_admin_key_for_tests_0001",
    identity: { keyId: "bootstrap", tenantId: "system", principalId: "admin", roles: ["admin"] },
  },
  writer: {
    key: "kl_writer_key_for_tests_001",
    identity: { keyId: "kw1", tenantId: "t1", principalId: "w1", roles: ["writer"] },
  },
  reader: {
    key: "kl_reader_key_for_tests_001",
    identity: { keyId: "kr1", tenantId: "t1", principalId: "r1", roles: ["reader"] },
  },
  tenantAdmin: {
    key: "kl_tenant_admin_key_tests_1",
    identity: { keyId: "ka1", tenantId: "t1", principalId: "a1", roles: ["admin"] },
  },
  otherWriter: {
    key: "kl_other_writer_key_tests_01",
    identity: { keyId: "kw2", tenantId: "t2", principalId: "w2", roles: ["writer"] },
  },
} as const satisfies Record<string, { key: string; identity: Identity }>;

export const bearer = (who: keyof typeof KEYS): string => `Bearer ${KEYS[who].key}`;

/**
 * A test double of the voter behind the HTTP edge: it records what the edge hands over and answers what
 * a test scripts. It has no Raft, no state machine and no admission of its own.
 */
export class FakeVoterService implements VoterService {
  readonly metricsRegistry = new Registry();
  /** The stages the edge reported, as "lane stage". */
  readonly stagesSeen: string[] = [];
  readonly commandStages: CommandStageObserver = {
    observe: (lane, stage) => this.stagesSeen.push(`${lane} ${stage}`),
  };
  readonly submitted: CommandSubmission[] = [];
  readonly reads: ReadRequest[] = [];
  readonly clusterChanges: ClusterChangeRequest[] = [];
  authentications = 0;
  healthReport: HealthReport = { live: true, ready: true, detail: { role: "leader", term: 3 } };
  leader: LeaderHint = { leaderId: "voter2", leaderHttpUrl: "http://127.0.0.1:7102" };
  private nextIndex = 10;

  /** What a command answers; by default a result naming the route parameters. */
  onSubmit: (command: CommandSubmission) => Promise<CommandAnswer> = async (command) => ({
    commandId: command.commandId,
    index: this.nextIndex++,
    result: { ...command.params, applied: command.kind },
  });

  onRead: (request: ReadRequest) => Promise<unknown> = async (request) => ({
    kind: request.kind,
    ...request.params,
  });

  onClusterChange: (request: ClusterChangeRequest) => Promise<unknown> = async (request) => ({
    kind: request.kind,
    ...request.params,
  });

  authenticate(apiKey: string): Identity | null {
    this.authentications++;
    // What catching up applied (a key created, or a role granted) wins over the keys known from the start.
    const caughtUp = this.caughtUp.get(apiKey);
    if (caughtUp !== undefined) return caughtUp;
    for (const { key, identity } of Object.values(KEYS)) if (key === apiKey) return identity;
    return null;
  }

  /** Keys `catchUp` adds to or changes in the catalog, as a voter applying a committed key or grant would. */
  readonly keysAfterCatchUp = new Map<string, Identity>();
  private readonly caughtUp = new Map<string, Identity>();
  catchUps = 0;
  /** Thrown by `catchUp` when set, as a voter without a leader would. */
  catchUpFailure: Error | undefined;

  async catchUp(): Promise<void> {
    this.catchUps++;
    if (this.catchUpFailure) throw this.catchUpFailure;
    for (const [key, identity] of this.keysAfterCatchUp) this.caughtUp.set(key, identity);
  }

  submitCommand(command: CommandSubmission): Promise<CommandAnswer> {
    this.submitted.push(command);
    return this.onSubmit(command);
  }

  read(request: ReadRequest): Promise<unknown> {
    this.reads.push(request);
    return this.onRead(request);
  }

  changeCluster(request: ClusterChangeRequest): Promise<unknown> {
    this.clusterChanges.push(request);
    return this.onClusterChange(request);
  }

  health(): HealthReport {
    return this.healthReport;
  }

  leaderHint(): LeaderHint {
    return this.leader;
  }

  get calls(): number {
    return this.submitted.length + this.reads.length + this.clusterChanges.length;
  }
}
