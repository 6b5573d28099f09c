import { setTimeout as sleep } from "node:timers/promises";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { poll } from "./apphost-poll.js";

/** What one authenticated admin call with a key said about it. */
export type AdminKeyVerdict =
  | { readonly accepted: true }
  | { readonly accepted: false; readonly refused: boolean; readonly reason: string };

/**
 * Asks a voter whether it accepts `adminKey`, with one admin call (`GET /v1/admin/admission`): the
 * readiness checks are unauthenticated, so only this tells a cluster bootstrapped with another key.
 * 401 and 403 refuse the key; any other failure is asked again until `timeoutMs` has passed, then
 * reported as not accepted and not refused.
 */
export async function checkAdminKey(
  httpUrl: string,
  adminKey: string,
  timeoutMs: number = APPHOST_DEFAULTS.readinessTimeoutMs / 6,
): Promise<AdminKeyVerdict> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let reason: string;
    try {
      const response = await poll(`${httpUrl}/v1/admin/admission`, APPHOST_DEFAULTS.admissionTimeoutMs, {
        authorization: `Bearer ${adminKey}`,
      });
      await response.body?.cancel();
      if (response.ok) return { accepted: true };
      if (response.status === 401 || response.status === 403) {
        return { accepted: false, refused: true, reason: `${httpUrl} answered ${response.status}` };
      }
      reason = `${httpUrl} answered ${response.status}`;
    } catch (err) {
      reason = `${httpUrl} did not answer: ${(err as Error).message}`;
    }
    if (Date.now() >= deadline) return { accepted: false, refused: false, reason };
    await sleep(APPHOST_DEFAULTS.pollIntervalMs);
  }
}
