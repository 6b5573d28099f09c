import { readFileSync } from "node:fs";
import { ConfigError } from "./config-error.js";
import type { RawValue } from "./config-property.js";

/** A value found in one source, remembered with where it came from for error messages. */
export interface RawSetting {
  readonly section: string;
  readonly property: string;
  readonly value: RawValue;
  readonly source: string;
}

/** Settings keyed `section:property` in lower case: configuration keys are case-insensitive. */
export type RawSettings = Map<string, RawSetting>;

export const settingKey = (section: string, property: string): string =>
  `${section}:${property}`.toLowerCase();

const ROOT = "keyload";

function put(
  settings: RawSettings,
  section: string,
  property: string,
  value: RawValue,
  source: string,
): void {
  settings.set(settingKey(section, property), { section, property, value, source });
}

/** `{"KeyLoad": {"Section": {"Property": value}}}` from an optional JSON file. */
export function readJsonFile(path: string, settings: RawSettings): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new ConfigError(`config file ${path}`, `cannot be read as JSON: ${(err as Error).message}`);
  }
  const entries = isObject(parsed) ? Object.entries(parsed) : [];
  // Anything beside the one root would be ignored: a typo, or a second root spelled in another case.
  const [root, ...others] = entries;
  if (root === undefined || others.length > 0 || root[0].toLowerCase() !== ROOT || !isObject(root[1])) {
    throw new ConfigError(
      `config file ${path}`,
      'must hold one object, {"KeyLoad": {...}}, and nothing else',
    );
  }
  for (const [section, props] of Object.entries(root[1])) {
    if (!isObject(props))
      throw new ConfigError(`KeyLoad:${section}`, `in ${path} must be an object of properties`);
    for (const [property, value] of Object.entries(props)) {
      if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
        throw new ConfigError(
          `KeyLoad:${section}:${property}`,
          `in ${path} must be a string, number or boolean`,
        );
      }
      put(settings, section, property, value, path);
    }
  }
}

/** `KeyLoad__Section__Property=V` environment variables, the prefix matched in any case. */
export function readEnvironment(env: NodeJS.ProcessEnv, settings: RawSettings): void {
  const seen = new Map<string, { readonly name: string; readonly value: string }>();
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    const parts = name.split("__");
    if (parts.length < 2 || parts[0]!.toLowerCase() !== ROOT) continue;
    if (parts.length !== 3 || !parts[1] || !parts[2]) {
      throw new ConfigError(name, "environment keys have the form KeyLoad__Section__Property");
    }
    // Keys are case-insensitive, so two spellings are one key: which won would depend on the
    // environment's order.
    const key = settingKey(parts[1], parts[2]);
    const earlier = seen.get(key);
    if (earlier !== undefined && earlier.value !== value) {
      throw new ConfigError(name, `is set twice, differently: as ${earlier.name} too`);
    }
    seen.set(key, { name, value });
    put(settings, parts[1], parts[2], value, `environment variable ${name}`);
  }
}

/**
 * `--KeyLoad:Section:Property=V` arguments, plus `--config FILE` (or `--config=FILE`) naming the JSON
 * file. Returns the file path, if any; other arguments are refused so a typo is never ignored.
 */
export function readArguments(args: readonly string[], settings: RawSettings): string | undefined {
  let configFile: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--config") {
      configFile = args[++i];
      if (!configFile) throw new ConfigError("--config", "needs a file path");
      continue;
    }
    if (arg.startsWith("--config=")) {
      configFile = arg.slice("--config=".length);
      if (!configFile) throw new ConfigError("--config", "needs a file path");
      continue;
    }
    const match = /^--keyload:([^:=]+):([^:=]+)=(.*)$/is.exec(arg);
    if (!match)
      throw new ConfigError(
        arg,
        "unknown argument (expected --KeyLoad:Section:Property=Value or --config FILE)",
      );
    put(settings, match[1]!, match[2]!, match[3]!, `argument ${arg.split("=")[0]}`);
  }
  return configFile;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
