import { existsSync, readFileSync } from "node:fs";
import { parse as parseDotenv } from "dotenv";
import { isVoterName, VOTER_NAMES, type VoterName } from "./app-model.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { InvalidSettingError, UnknownVoterError } from "./apphost-errors.js";

/**
 * Contract section 2, configuration forwarding: every `KeyLoad__*` variable goes to all voters;
 * `AppHost__Voters__<voter>__KeyLoad__<Section>__<Property>` goes to that voter alone, as
 * `KeyLoad__<Section>__<Property>`, over the shared value. The process environment wins over `.env`.
 * Names are matched without regard to case, as the voter reads them.
 */
export interface ForwardedConfig {
  /** Each voter's forwarded user configuration: the shared values with its own over them. */
  readonly voters: Readonly<Record<VoterName, Readonly<Record<string, string>>>>;
  /** `KeyLoad__Bootstrap__AdminKey`, which becomes the cluster's admin key rather than being forwarded. */
  readonly adminKey?: string;
}

const KEYLOAD = "keyload";
const ADMIN_KEY = "bootstrap:adminkey";

/** Settings the AppHost gives each voter itself; a user value would split the cluster or be ignored. */
function reservedReason(section: string, property: string): string | undefined {
  const s = section.toLowerCase();
  const p = property.toLowerCase();
  if (s === "node") return "the AppHost sets each voter's identity, addresses and data dir";
  if (s === "cluster" && p === "voters") return "the AppHost sets the peer list from its voters";
  if (s === "cluster" && p === "secret") {
    return "the AppHost generates the cluster secret and keeps it in the state dir (cluster.secret)";
  }
  // A voter told to bootstrap a foreign ID, on an empty data dir after `replace`, forms a second cluster.
  if (s === "cluster" && p === "bootstrapid") {
    return "the AppHost makes the cluster's ID and keeps it in the state dir (cluster.json); it tells each voter's first start alone to bootstrap";
  }
  return undefined;
}

interface Setting {
  readonly name: string;
  readonly value: string;
}

/** `.env` values, then the process environment over them, one entry per name ignoring case. */
export function mergeSources(
  envFileValues: Readonly<Record<string, string>>,
  processEnv: NodeJS.ProcessEnv,
): Map<string, Setting> {
  const merged = new Map<string, Setting>();
  for (const source of [envFileValues, processEnv]) {
    for (const [name, value] of Object.entries(source)) {
      if (value !== undefined) merged.set(name.toLowerCase(), { name, value });
    }
  }
  return merged;
}

/** Parses a `.env` file; a missing file is no configuration, not an error. */
export function readEnvFile(file: string): Record<string, string> {
  if (!existsSync(file)) return {};
  try {
    return parseDotenv(readFileSync(file));
  } catch (err) {
    throw new InvalidSettingError(file, `cannot be read: ${(err as Error).message}`);
  }
}

/** Whether a variable is one the AppHost consumes; such variables are never inherited by a voter as-is. */
export function isForwardingVariable(name: string): boolean {
  const lower = name.toLowerCase();
  return lower.startsWith(`${KEYLOAD}__`) || lower.startsWith("apphost__");
}

/** Splits the variables into what each voter receives. Throws InvalidSettingError or UnknownVoterError. */
export function forwardConfig(variables: Iterable<Setting>): ForwardedConfig {
  const shared = new Map<string, Setting>();
  const own = new Map<VoterName, Map<string, Setting>>(VOTER_NAMES.map((v) => [v, new Map()]));
  let adminKey: string | undefined;

  for (const { name, value } of variables) {
    const parts = name.split("__");
    const head = parts[0]?.toLowerCase();
    if (head === KEYLOAD) {
      const key = settingKey(name, parts);
      if (key === ADMIN_KEY) adminKey = value;
      else shared.set(key, { name, value });
      continue;
    }
    if (head !== "apphost") continue;
    if (parts.length < 4 || parts[1]?.toLowerCase() !== "voters" || parts[3]?.toLowerCase() !== KEYLOAD) {
      throw new InvalidSettingError(
        name,
        "the AppHost reads only AppHost__Voters__<voter>__KeyLoad__<Section>__<Property>",
      );
    }
    const voter = parts[2]!.toLowerCase();
    if (!isVoterName(voter)) throw new UnknownVoterError(parts[2]!, VOTER_NAMES);
    const forwardedName = parts.slice(3).join("__");
    const key = settingKey(name, parts.slice(3));
    if (key === ADMIN_KEY) {
      throw new InvalidSettingError(
        name,
        "the admin key is the same for every voter: set KeyLoad__Bootstrap__AdminKey",
      );
    }
    own.get(voter)!.set(key, { name: forwardedName, value });
  }

  const voters = {} as Record<VoterName, Record<string, string>>;
  for (const voter of VOTER_NAMES) {
    const env: Record<string, string> = {};
    for (const [key, setting] of shared) {
      if (!own.get(voter)!.has(key)) env[setting.name] = setting.value;
    }
    for (const setting of own.get(voter)!.values()) env[setting.name] = setting.value;
    voters[voter] = env;
  }
  return adminKey === undefined ? { voters } : { voters, adminKey };
}

/** A voter's forwarded configuration over the AppHost's defaults for the voters it runs itself. */
export function withLocalVoterDefaults(forwarded: Readonly<Record<string, string>>): Record<string, string> {
  const defaults: Record<string, string> = { KeyLoad__Log__Level: APPHOST_DEFAULTS.voterLogLevel };
  const named = new Set(Object.keys(forwarded).map((name) => name.toLowerCase()));
  for (const name of Object.keys(defaults)) if (named.has(name.toLowerCase())) delete defaults[name];
  return { ...defaults, ...forwarded };
}

/**
 * Refuses TLS settings for voters the AppHost runs itself: they serve plain HTTP on loopback, which its
 * readiness checks, status, dashboard and testing API use. TLS is for a deployment `publish` writes.
 */
export function refuseLocalTls(voters: ForwardedConfig["voters"]): void {
  for (const env of Object.values(voters)) {
    for (const name of Object.keys(env)) {
      if (name.toLowerCase().startsWith("keyload__tls__")) {
        throw new InvalidSettingError(
          name,
          "cannot be set for `up`: its voters serve plain HTTP on loopback to the AppHost; TLS is for a published deployment (`publish`)",
        );
      }
    }
  }
}

/**
 * The case-insensitive `section:property` key of a `KeyLoad__Section__Property` name (`parts` is the
 * name split at `__`, starting at `KeyLoad`). A malformed name is forwarded under its own name so the
 * voter refuses it with its own message naming the key.
 */
function settingKey(name: string, parts: readonly string[]): string {
  if (parts.length !== 3) return name.toLowerCase();
  const [, section = "", property = ""] = parts;
  const reason = reservedReason(section, property);
  if (reason) throw new InvalidSettingError(name, `cannot be set: ${reason}`);
  return `${section}:${property}`.toLowerCase();
}

/** The forwarded configuration from a `.env` file and the process environment. */
export function readForwardedConfig(envFile: string, processEnv: NodeJS.ProcessEnv): ForwardedConfig {
  return forwardConfig(mergeSources(readEnvFile(envFile), processEnv).values());
}
