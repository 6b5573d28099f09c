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

/**
 * The keys one source has set so far. Keys are case-insensitive, so two spellings in one source are
 * one key: set differently, which one won would depend on their order, so that is refused.
 */
class SourceKeys {
  private readonly seen = new Map<string, { readonly name: string; readonly value: RawValue }>();

  check(section: string, property: string, name: string, value: RawValue): void {
    const key = settingKey(section, property);
    const earlier = this.seen.get(key);
    if (earlier !== undefined && earlier.value !== value) {
      throw new ConfigError(name, `is set twice, differently: as ${earlier.name} too`);
    }
    this.seen.set(key, { name, value });
  }
}

/**
 * Where JSON.parse stopped, as a line and column of `text`, without its message: V8 quotes the text
 * around the error, which in a config file may be the cluster secret.
 */
function syntaxErrorAt(text: string, err: unknown): string {
  const position = /position (\d+)/.exec(err instanceof Error ? err.message : "")?.[1];
  if (position === undefined) return "it is not valid JSON";
  const before = text.slice(0, Number(position)).split("\n");
  return `it is not valid JSON: a syntax error at line ${before.length}, column ${before.at(-1)!.length + 1}`;
}

/** `{"KeyLoad": {"Section": {"Property": value}}}` from an optional JSON file. */
export function readJsonFile(path: string, settings: RawSettings): void {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(`config file ${path}`, `cannot be read: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`config file ${path}`, `cannot be read as JSON: ${syntaxErrorAt(text, err)}`);
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
  const keys = new SourceKeys();
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
      keys.check(section, property, `KeyLoad:${section}:${property} in ${path}`, value);
      put(settings, section, property, value, path);
    }
  }
}

/** `KeyLoad__Section__Property=V` environment variables, the prefix matched in any case. */
export function readEnvironment(env: NodeJS.ProcessEnv, settings: RawSettings): void {
  const keys = new SourceKeys();
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    const parts = name.split("__");
    if (parts.length < 2 || parts[0]!.toLowerCase() !== ROOT) continue;
    if (parts.length !== 3 || !parts[1] || !parts[2]) {
      throw new ConfigError(name, "environment keys have the form KeyLoad__Section__Property");
    }
    keys.check(parts[1], parts[2], name, value);
    put(settings, parts[1], parts[2], value, `environment variable ${name}`);
  }
}

/**
 * `--KeyLoad:Section:Property=V` arguments, plus `--config FILE` (or `--config=FILE`) naming the JSON
 * file. Returns the file path, if any; other arguments are refused so a typo is never ignored.
 */
export function readArguments(args: readonly string[], settings: RawSettings): string | undefined {
  let configFile: string | undefined;
  const keys = new SourceKeys();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const file = arg === "--config" ? (args[++i] ?? "") : arg.startsWith("--config=") ? arg.slice(9) : null;
    if (file !== null) {
      if (!file) throw new ConfigError("--config", "needs a file path");
      // One file is read: a second would silently replace the first.
      if (configFile !== undefined)
        throw new ConfigError("--config", `is given twice: ${configFile} and ${file}`);
      configFile = file;
      continue;
    }
    const match = /^--keyload:([^:=]+):([^:=]+)=(.*)$/is.exec(arg);
    if (!match)
      throw new ConfigError(
        arg,
        "unknown argument (expected --KeyLoad:Section:Property=Value or --config FILE)",
      );
    const name = `argument ${arg.split("=")[0]}`;
    keys.check(match[1]!, match[2]!, name, match[3]!);
    put(settings, match[1]!, match[2]!, match[3]!, name);
  }
  return configFile;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
