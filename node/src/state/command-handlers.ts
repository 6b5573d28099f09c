import { checkText, MAX_KEY_CHARS } from "../requests/identifiers.js";
import type { ApplyContext } from "./apply-context.js";
import { type CommandEnvelope, type EntryKind, routeParam } from "./command-envelope.js";
import { parseDirective } from "./dispatch.js";
import { parseEdge } from "./graph.js";
import {
  invalid,
  type JsonObject,
  optionalInteger,
  optionalString,
  parseBody,
  requireString,
} from "./json-body.js";
import { checkJsonValue } from "./json-value.js";
import { limitsFingerprint, parseLimitsText } from "./limits.js";
import { parseMembershipWrite } from "./membership.js";
import { parsePrincipalWrite } from "./principals.js";
import type { Stores } from "./stores.js";
import { applyWriteSet, parseWriteSet } from "./transactions.js";

/**
 * Applies one command inside its savepoint and returns its result. Anything the command cannot do is a
 * thrown KeyLoadError, which the state machine commits as the command's deterministic outcome.
 */
export type CommandHandler = (ctx: ApplyContext, envelope: CommandEnvelope, stores: Stores) => object;

/**
 * The kinds that may refuse after they have written (a later operation's check fails, or a final
 * invariant does), so they run in a savepoint their refusal rolls back. Every other handler makes all
 * its checks before its first write, and runs without one: a savepoint per command costs about a tenth
 * of a catalog put.
 */
export const REFUSES_AFTER_WRITING: ReadonlySet<EntryKind> = new Set<EntryKind>([
  "transaction",
  "queue.complete",
  "subscription.complete",
  "admin.putPrincipal",
  "admin.deleteKey",
  // Its purge of defunct rows comes first, so that a write finds the table as it will be.
  "membership.put",
]);

/** Subscription deliveries default to a batch this size (capped by the canonical lease batch). */
const DEFAULT_DELIVERY_BATCH = 100;

export const COMMAND_HANDLERS: Record<EntryKind, CommandHandler> = {
  "catalog.put": (ctx, env, { documents }) => {
    const body = parseBody(env.payload, false);
    if (!("value" in body)) throw invalid("value is required");
    return documents.put(ctx, routeParam(env, "key"), body.value, expectedVersion(body));
  },
  "catalog.delete": (ctx, env, { documents }) => {
    const body = parseBody(env.payload, true);
    return documents.delete(ctx, routeParam(env, "key"), expectedVersion(body));
  },
  transaction: (ctx, env, { documents, queues }) => {
    const writes = parseWriteSet(parseBody(env.payload, false), ctx.limits);
    if (writes.operations.length === 0 && writes.outbox.length === 0) {
      throw invalid("a transaction needs at least one operation or outbox message", "EmptyTransaction");
    }
    return applyWriteSet(ctx, documents, queues, writes);
  },
  "graph.putEdge": (ctx, env, { graph }) => graph.put(ctx, parseEdge(parseBody(env.payload, false))),
  "graph.deleteEdge": (ctx, env, { graph }) => graph.delete(ctx, parseEdge(parseBody(env.payload, false))),
  "queue.enqueue": (ctx, env, { queues }) => {
    const body = parseBody(env.payload, false);
    if (!("body" in body)) throw invalid("body is required");
    const message = { body: body.body, shape: checkJsonValue(body.body) };
    return queues.enqueue(ctx, routeParam(env, "queue"), message, delay(ctx, body), 0);
  },
  "queue.lease": (ctx, env, { queues }) => {
    const body = parseBody(env.payload, true);
    const max = optionalInteger(body, "max", 1, ctx.limits.maxLeaseBatch) ?? 1;
    return queues.leaseBatch(ctx, routeParam(env, "queue"), max, visibility(ctx, body));
  },
  "queue.ack": (ctx, env, { queues }) => {
    const body = parseBody(env.payload, false);
    return queues.ack(ctx, routeParam(env, "queue"), routeParam(env, "messageId"), leaseToken(body));
  },
  "queue.nack": (ctx, env, { queues }) => {
    const body = parseBody(env.payload, false);
    const token = leaseToken(body);
    return queues.nack(ctx, routeParam(env, "queue"), routeParam(env, "messageId"), token, delay(ctx, body));
  },
  "queue.renew": (ctx, env, { queues }) => {
    const body = parseBody(env.payload, false);
    const token = leaseToken(body);
    return queues.renew(
      ctx,
      routeParam(env, "queue"),
      routeParam(env, "messageId"),
      token,
      visibility(ctx, body),
    );
  },
  "queue.complete": (ctx, env, { documents, queues }) => {
    const body = parseBody(env.payload, false);
    const writes = parseWriteSet(body, ctx.limits);
    const acked = queues.ack(ctx, routeParam(env, "queue"), routeParam(env, "messageId"), leaseToken(body));
    return { ...acked, ...applyWriteSet(ctx, documents, queues, writes) };
  },
  "subscription.put": (ctx, env, { subscriptions }) => {
    const body = parseBody(env.payload, false);
    const prefix = requireString(body, "prefix");
    if (prefix.length > 0) checkText("prefix", prefix, MAX_KEY_CHARS);
    const from = optionalString(body, "from") ?? "beginning";
    if (from !== "beginning" && from !== "end") throw invalid("from is beginning or end");
    return subscriptions.put(ctx, routeParam(env, "name"), prefix, from === "end");
  },
  "subscription.deliver": (ctx, env, { subscriptions }) => {
    const body = parseBody(env.payload, true);
    const max =
      optionalInteger(body, "max", 1, ctx.limits.maxLeaseBatch) ??
      Math.min(DEFAULT_DELIVERY_BATCH, ctx.limits.maxLeaseBatch);
    return subscriptions.deliver(ctx, routeParam(env, "name"), max, visibility(ctx, body));
  },
  "subscription.ack": (ctx, env, { subscriptions }) => {
    parseBody(env.payload, true);
    return subscriptions.ack(ctx, routeParam(env, "name"), routeParam(env, "deliveryId"));
  },
  "subscription.complete": (ctx, env, { documents, queues, subscriptions }) => {
    const writes = parseWriteSet(parseBody(env.payload, false), ctx.limits);
    const acked = subscriptions.ack(ctx, routeParam(env, "name"), routeParam(env, "deliveryId"));
    return { ...acked, ...applyWriteSet(ctx, documents, queues, writes) };
  },
  "membership.put": (ctx, env, { membership }) =>
    membership.put(ctx, routeParam(env, "memberId"), parseMembershipWrite(parseBody(env.payload, false))),
  "dispatch.append": (ctx, env, { dispatch }) =>
    dispatch.append(ctx, routeParam(env, "channel"), parseDirective(parseBody(env.payload, false))),
  "admin.putPrincipal": (ctx, env, { principals }) =>
    principals.putPrincipal(ctx, parsePrincipalWrite(parseBody(env.payload, false))),
  "admin.createKey": (ctx, env, { principals }) => {
    parseBody(env.payload, true);
    // decodeCommand guarantees the hash on this kind.
    return principals.createKey(ctx, routeParam(env, "principalId"), env.generated!);
  },
  "admin.deleteKey": (ctx, env, { principals }) => {
    parseBody(env.payload, true);
    return principals.deleteKey(ctx, routeParam(env, "principalId"), routeParam(env, "keyId"));
  },
  "system.canonicalLimits": (ctx, env, { canonicalLimits }) => {
    const limits = parseLimitsText(env.payload);
    canonicalLimits.set(limits, ctx.index);
    return { limitsFingerprint: limitsFingerprint(limits) };
  },
  "system.bootstrapAdmin": (ctx, env, { principals }) => {
    parseBody(env.payload, true);
    // decodeCommand guarantees the hash on this kind.
    return principals.bootstrapAdmin(ctx, env.generated!);
  },
};

function expectedVersion(body: JsonObject): number | undefined {
  return optionalInteger(body, "expectedVersion", 0, Number.MAX_SAFE_INTEGER);
}

function delay(ctx: ApplyContext, body: JsonObject): number {
  return optionalInteger(body, "delayMs", 0, ctx.limits.maxDelayMs) ?? 0;
}

function visibility(ctx: ApplyContext, body: JsonObject): number {
  return (
    optionalInteger(body, "visibilityTimeoutMs", 1, ctx.limits.maxVisibilityTimeoutMs) ??
    ctx.limits.defaultVisibilityTimeoutMs
  );
}

/** Queue acks, nacks, renewals and completions name their lease in the body: `{"leaseToken"}`. */
function leaseToken(body: JsonObject): string {
  return requireString(body, "leaseToken");
}
