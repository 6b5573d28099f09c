/**
 * How the voter image's entrypoint turns its container's environment into the voter's. This folder is
 * compiled into the image on its own (publish-image.ts), so it imports nothing but Node.js.
 */

/** The entrypoint refuses to start the voter; the message names the variable and what to do. */
export class LaunchError extends Error {
  readonly code = "KeyLoadImageLaunch";
  override readonly name = "LaunchError";
}

export type LaunchEnv = Record<string, string>;

/** The name under which `env` holds `name`, ignoring case as the voter does. */
export function nameIn(env: LaunchEnv, name: string): string | undefined {
  const lower = name.toLowerCase();
  return Object.keys(env).find((key) => key.toLowerCase() === lower);
}

export function valueIn(env: LaunchEnv, name: string): string | undefined {
  const key = nameIn(env, name);
  return key === undefined ? undefined : env[key];
}

function put(env: LaunchEnv, name: string, value: string): void {
  const old = nameIn(env, name);
  if (old !== undefined) delete env[old];
  env[name] = value;
}

const FILE_SUFFIX = "_file";

/**
 * `KeyLoad__Section__Property_FILE=/path` becomes `KeyLoad__Section__Property` with the file's content
 * (its trailing newline dropped): Docker's convention for secrets, which compose and Kubernetes mount
 * as files. The voter itself reads settings only from the environment and its arguments.
 */
export function readSettingFiles(env: LaunchEnv, readFile: (path: string) => string): LaunchEnv {
  const out = { ...env };
  for (const [name, path] of Object.entries(env)) {
    const lower = name.toLowerCase();
    if (!lower.startsWith("keyload__") || !lower.endsWith(FILE_SUFFIX)) continue;
    let value: string;
    try {
      value = readFile(path).replace(/\r?\n$/, "");
    } catch (err) {
      throw new LaunchError(
        `${name}: cannot read ${path} (${(err as Error).message}); the file must be readable by the ` +
          "image's user, uid 10001",
      );
    }
    delete out[name];
    put(out, name.slice(0, -FILE_SUFFIX.length), value);
  }
  return out;
}

/**
 * The voter's name: `KeyLoad__Node__Id` when given, else from the host name of a StatefulSet's pod,
 * `<set>-<ordinal>`, ordinal 0 being voter1, so that one pod template serves the three voters.
 */
export function voterIdOf(env: LaunchEnv, hostname: string): string {
  const given = valueIn(env, "KeyLoad__Node__Id");
  if (given !== undefined && given !== "") return given;
  const ordinal = /-(\d+)$/.exec(hostname)?.[1];
  if (ordinal === undefined) {
    throw new LaunchError(
      `KeyLoad__Node__Id is not set and the host name ${JSON.stringify(hostname)} is not a StatefulSet ` +
        "pod's (<name>-<ordinal>)",
    );
  }
  return `voter${Number(ordinal) + 1}`;
}

const OVERRIDE = /^apphost__voters__([^_]+(?:_[^_]+)*)__(keyload__.+)$/i;

/**
 * The contract's per-voter forwarding (section 2), for outputs that share one environment among the
 * voters (a Kubernetes ConfigMap): `AppHost__Voters__<id>__KeyLoad__Section__Property` is this voter's
 * `KeyLoad__Section__Property` when `<id>` is its name, over the shared value; the other voters'
 * variables are dropped. Also sets `KeyLoad__Node__Id`.
 */
export function applyVoterOverrides(env: LaunchEnv, voterId: string): LaunchEnv {
  const out: LaunchEnv = {};
  const own: [string, string][] = [];
  for (const [name, value] of Object.entries(env)) {
    const match = OVERRIDE.exec(name);
    if (match === null) {
      if (!name.toLowerCase().startsWith("apphost__")) out[name] = value;
      continue;
    }
    if (match[1]!.toLowerCase() === voterId.toLowerCase()) own.push([match[2]!, value]);
  }
  for (const [name, value] of own) put(out, name, value);
  put(out, "KeyLoad__Node__Id", voterId);
  return out;
}

/** The whole resolution, in order: setting files, the voter's name, its own settings. */
export function resolveLaunchEnv(
  env: NodeJS.ProcessEnv,
  hostname: string,
  readFile: (path: string) => string,
): LaunchEnv {
  const defined: LaunchEnv = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) defined[name] = value;
  const withFiles = readSettingFiles(defined, readFile);
  return applyVoterOverrides(withFiles, voterIdOf(withFiles, hostname));
}
