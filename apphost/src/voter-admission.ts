import type { AdmissionStatus } from "@keyload/client";
import { buildAppModel, httpUrlOf, stateDirPaths, type VoterName } from "./app-model.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { AdmissionUnavailableError, MissingAdminKeyError, NoClusterError } from "./apphost-errors.js";
import { poll } from "./apphost-poll.js";
import { readState } from "./apphost-state.js";
import { readKeptCredentials } from "./cluster-credentials.js";
import { processState } from "./process-table.js";

/** One voter's `GET /v1/admin/admission` (contract section 7, with the voter's `disk` and `storageLimits`). */
export interface VoterAdmission {
  readonly name: VoterName;
  readonly httpUrl: string;
  /** Null when the voter did not answer; `error` then says why. */
  readonly admission: AdmissionStatus | null;
  readonly error: string | null;
}

function errorOf(body: unknown): string {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return typeof error?.code === "string" ? `${error.code}: ${String(error.message)}` : "an unreadable answer";
}

/** Asks one voter with the admin key; throws AdmissionUnavailableError. */
async function readAdmission(httpUrl: string, adminKey: string): Promise<AdmissionStatus> {
  let response: Response;
  try {
    response = await poll(`${httpUrl}/v1/admin/admission`, APPHOST_DEFAULTS.admissionTimeoutMs, {
      authorization: `Bearer ${adminKey}`,
    });
  } catch (err) {
    throw new AdmissionUnavailableError(`${httpUrl} did not answer: ${(err as Error).message}`);
  }
  const body: unknown = await response.json().catch(() => null);
  if (!response.ok)
    throw new AdmissionUnavailableError(`${httpUrl} answered ${response.status} ${errorOf(body)}`);
  return body as AdmissionStatus;
}

/**
 * The admission status of each voter of the cluster in `stateDir` (or of `only`), asked with the
 * admin key kept there. A voter that is not running, or does not answer, has `admission` null.
 */
export async function clusterAdmission(stateDir: string, only?: VoterName): Promise<VoterAdmission[]> {
  const state = readState(stateDirPaths(stateDir).stateFile);
  if (!state) throw new NoClusterError(`there is no cluster in ${stateDir} (run \`up\` first)`);
  const model = buildAppModel(stateDir, state.voters);
  const voters = model.voters
    .filter((v) => only === undefined || v.name === only)
    .map((v) => ({
      voter: v,
      current: processState(state.voters.find((r) => r.name === v.name)?.process ?? null),
    }));
  // A cluster that is not running has nothing to ask, whatever became of its admin key.
  const credentials = voters.some((v) => v.current === "running") ? readKeptCredentials(model) : null;
  if (credentials === undefined) {
    throw new MissingAdminKeyError(model.stateDir);
  }
  return Promise.all(
    voters.map(async ({ voter, current }): Promise<VoterAdmission> => {
      const httpUrl = httpUrlOf(voter);
      if (current !== "running" || credentials === null) {
        return { name: voter.name, httpUrl, admission: null, error: `${voter.name} is ${current}` };
      }
      const { adminKey } = credentials;
      try {
        return { name: voter.name, httpUrl, admission: await readAdmission(httpUrl, adminKey), error: null };
      } catch (err) {
        if (!(err instanceof AdmissionUnavailableError)) throw err;
        return { name: voter.name, httpUrl, admission: null, error: err.message };
      }
    }),
  );
}
