import { InvalidArgumentError, NotFoundError } from "@keyload/contract";
import type { Registry } from "prom-client";
import { AdmissionRefusal } from "../admission/admission-refusal.js";
import { admissionStatus } from "../admission/admission-status.js";
import type { CommandAdmissionGovernor } from "../admission/command-admission-governor.js";
import type { CommandScheduler } from "../admission/command-scheduler.js";
import type { CommandStageObserver } from "../admission/command-stages.js";
import type { DiskFloor } from "../admission/disk-floor.js";
import type { HttpAdmissionGovernor } from "../admission/http-admission-governor.js";
import type { StorageLimits } from "../fs/sqlite-limits.js";
import type {
  ClusterChangeRequest,
  CommandAnswer,
  CommandSubmission,
  HealthReport,
  Identity,
  LeaderHint,
  ReadRequest,
  VoterService,
} from "../http/voter-service.js";
import type { PeerTransport } from "../peer/peer-transport.js";
import type { ConfState } from "../raft/types.js";
import { generateApiKey } from "../state/api-key.js";
import type { ApiKeyHasher } from "../state/api-key-hasher.js";
import { parseBulkGetRequest, parseQueryRequest } from "../state/catalog-query.js";
import { parseTraverseRequest } from "../state/graph.js";
import { parseSearchRequest } from "../state/search-query.js";
import type { StateMachine } from "../state/state-machine.js";
import { ClusterMembership } from "./cluster-membership.js";
import type { CommandResult, VoterCommand } from "./command-router.js";
import { memberReachedAt } from "./member-join.js";
import type { RaftDriver } from "./raft-driver.js";
import type { CommandRejections } from "./voter-metrics.js";

export interface VoterServiceParts {
  readonly nodeId: string;
  readonly httpUrl: string;
  readonly driver: RaftDriver;
  readonly stateMachine: StateMachine;
  /** Hashes API keys as the state stores them: the keys a request presents and the keys made here. */
  readonly keyHasher: ApiKeyHasher;
  readonly transport: PeerTransport;
  readonly commandGovernor: CommandAdmissionGovernor;
  readonly httpGovernor: HttpAdmissionGovernor;
  readonly diskFloor: DiskFloor;
  readonly storageLimits: StorageLimits;
  readonly scheduler: CommandScheduler<VoterCommand, CommandResult>;
  readonly metricsRegistry: Registry;
  readonly commandStages: CommandStageObserver;
  readonly rejections: CommandRejections;
  /** How far the applied index may trail the commit index for the voter to call itself ready. */
  readonly readyLagEntries: number;
  /** How long a membership change may take to apply before its outcome is reported unknown. */
  readonly replicationDeadlineMs: number;
}

/**
 * The voter behind the HTTP edge: command admission, then the command scheduler (which replicates on the
 * leader or forwards to it), and linearizable reads through ReadIndex on the local state machine.
 */
export class KeyLoadVoterService implements VoterService {
  readonly metricsRegistry: Registry;
  readonly commandStages: CommandStageObserver;
  /** The Raft configuration's administration, for the admin routes and new members' join requests. */
  readonly membership: ClusterMembership;

  constructor(private readonly parts: VoterServiceParts) {
    this.metricsRegistry = parts.metricsRegistry;
    this.commandStages = parts.commandStages;
    this.membership = new ClusterMembership(parts.driver, {
      isKnownName: (name) => name === parts.nodeId || parts.transport.peerInfo(name) !== null,
      memberAt: memberReachedAt(parts.transport),
      // A learner within the lag a voter may have and still call itself ready.
      maxPromoteLagEntries: parts.readyLagEntries,
      deadlineMs: parts.replicationDeadlineMs,
    });
  }

  authenticate(apiKey: string): Identity | null {
    // The catalog is looked up by the key's keyed hash, so no comparison of the key itself can leak
    // timing. The principal is returned as the catalog holds it (frozen, shared by that key's requests).
    return this.parts.stateMachine.authenticate(this.parts.keyHasher.hash(apiKey)) ?? null;
  }

  catchUp(): Promise<void> {
    return this.parts.driver.readBarrier();
  }

  async submitCommand(cmd: CommandSubmission): Promise<CommandAnswer> {
    const { commandGovernor, scheduler } = this.parts;
    const admitted = commandGovernor.tryAdmit({
      lane: cmd.lane,
      tenantId: cmd.identity.tenantId,
      principalId: cmd.identity.principalId,
      payload: cmd.payload,
    });
    if (admitted instanceof AdmissionRefusal) {
      this.parts.rejections.inc({ lane: cmd.lane, reason: admitted.reason });
      throw admitted.toError(cmd.commandId, this.parts.driver.isLeader());
    }
    let apiKey: string | undefined;
    let command: VoterCommand;
    try {
      // A new API key is made here; only its hash enters the log, the plain key goes back once.
      apiKey = cmd.kind === "admin.createKey" ? generateApiKey() : undefined;
      command = {
        commandId: cmd.commandId,
        kind: cmd.kind,
        lane: cmd.lane,
        params: cmd.params,
        payload: cmd.payload,
        tenant: cmd.identity.tenantId,
        principal: cmd.identity.principalId,
        keyId: cmd.identity.keyId,
        ...(apiKey ? { generated: { keyHash: this.parts.keyHasher.hash(apiKey) } } : {}),
      };
    } catch (err) {
      // Not yet the scheduler's to release: nothing was submitted.
      admitted.release();
      throw err;
    }
    const outcome = await scheduler.submit(admitted, command);
    if (!outcome.ok) throw outcome.error.withCommandId(cmd.commandId);
    const { index, duplicate, result } = outcome.value;
    const revealed = apiKey !== undefined && !duplicate && isRecord(result) ? { ...result, apiKey } : result;
    return { commandId: cmd.commandId, index, result: revealed };
  }

  async read(req: ReadRequest): Promise<unknown> {
    const { driver, stateMachine: sm } = this.parts;
    await driver.readBarrier();
    // The edge authorized the read against the catalog as this voter had applied it then, which may
    // have trailed the commit (a follower, or a leader still applying). Everything committed before the
    // read began has been applied now, a key revoke or role change included: authorized again here.
    const denied = sm.authorizationRefusal(req.identity, req.roles, req.kind);
    if (denied !== undefined) throw denied;
    const tenant = req.identity.tenantId;
    switch (req.kind) {
      case "catalog.get": {
        const key = req.params.key!;
        const doc = sm.getDocumentJson(tenant, key);
        if (!doc) throw new NotFoundError(`no document at key ${key}`, { reason: "DocumentNotFound" });
        return doc;
      }
      case "catalog.bulkGet":
        return sm.bulkGet(tenant, parseBulkGetRequest(req.body));
      case "query":
        return sm.query(tenant, parseQueryRequest(req.body));
      case "search":
        return sm.search(tenant, parseSearchRequest(req.body));
      case "graph.traverse":
        return sm.traverse(tenant, parseTraverseRequest(req.body));
      case "command.get": {
        const commandId = req.params.commandId!;
        const outcome = sm.commandOutcome(tenant, commandId);
        if (!outcome)
          throw new NotFoundError(`no outcome is committed for command ${commandId}`, {
            reason: "CommandNotFound",
          });
        return outcome;
      }
      case "membership.list":
        return sm.membership(tenant);
      case "dispatch.read": {
        const after = nonNegative(req.query.after ?? "0", "after");
        const limit = req.query.limit === undefined ? undefined : nonNegative(req.query.limit, "limit");
        const channel = req.params.channel!;
        return { channel, directives: sm.readDispatch(tenant, channel, after, limit) };
      }
      case "admin.admissionStatus":
        return admissionStatus(this.parts);
      case "cluster.members":
        return this.membership.list();
    }
  }

  async changeCluster(req: ClusterChangeRequest): Promise<unknown> {
    const { driver, stateMachine: sm } = this.parts;
    // As for a read: the edge's catalog may trail the commit, so the admin's key and role are checked
    // again against everything committed before the change began.
    await driver.readBarrier();
    const denied = sm.authorizationRefusal(req.identity, req.roles, req.kind);
    if (denied !== undefined) throw denied;
    switch (req.kind) {
      case "cluster.addLearner":
        return this.membership.addLearner(memberIdOf(req.body));
      case "cluster.promote":
        return this.membership.promote(req.params.clusterMemberId!);
      case "cluster.remove":
        return this.membership.remove(req.params.clusterMemberId!);
      case "cluster.transferLeader":
        return this.membership.transferLeader(memberIdOf(req.body));
    }
  }

  health(): HealthReport {
    const s = this.parts.driver.status();
    // A voter whose storage or apply failed takes no part in Raft any more (fail-stop): not live,
    // until the process that runs it ends.
    const failure = this.parts.driver.failureCause();
    // Measured against the leader's announced commit, so a voter that lost its data and restarts
    // from nothing is not ready until it has caught up.
    const lag = Math.max(s.commit, s.leaderCommit) - this.parts.stateMachine.applied().index;
    const reasons: string[] = [];
    if (failure !== null) reasons.push(failure.message);
    if (s.leader === null) reasons.push("no leader is known");
    if (lag > this.parts.readyLagEntries) reasons.push(`applied index trails commit by ${lag} entries`);
    // Until the leader's bootstrap admin entry applies here, no key (the admin's included) authenticates.
    if (!this.parts.stateMachine.hasBootstrapAdmin()) reasons.push("the bootstrap admin is not applied yet");
    return {
      live: failure === null,
      ready: reasons.length === 0,
      detail: {
        nodeId: this.parts.nodeId,
        memberId: s.id,
        member: memberKind(s.id, s.conf),
        role: s.role,
        term: s.term,
        leader: s.leader,
        commit: s.commit,
        applied: s.applied,
        ...(failure === null ? {} : { failed: { code: failure.code, source: failure.source } }),
        reasons,
      },
    };
  }

  leaderHint(): LeaderHint {
    const leaderId = this.parts.driver.status().leader;
    if (leaderId === null) return { leaderId: null, leaderHttpUrl: null };
    if (leaderId === this.parts.nodeId) return { leaderId, leaderHttpUrl: this.parts.httpUrl };
    return { leaderId, leaderHttpUrl: this.parts.transport.peerInfo(leaderId)?.httpUrl ?? null };
  }
}

/** What this voter's member ID is in the configuration it has applied; null while not a member. */
function memberKind(id: string, conf: ConfState): "voter" | "learner" | null {
  if (conf.voters.includes(id)) return "voter";
  return conf.learners?.includes(id) ? "learner" : null;
}

/** The `memberId` of an add's body, which the edge's schema has checked. */
function memberIdOf(body: unknown): string {
  return (body as { memberId: string }).memberId;
}

function nonNegative(raw: string, name: string): number {
  if (!/^\d{1,15}$/.test(raw)) {
    throw new InvalidArgumentError(`${name} must be a non-negative integer`, {
      reason: "InvalidQueryParameter",
    });
  }
  return Number(raw);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
