import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { AppModel, ClusterCredentials, StateDirPaths } from "./app-model.js";

/**
 * Writes a file only its owner can read: the secret and the admin key never sit world-readable. The
 * value alone, no newline after it: a script that reads the file as it is gets the key itself.
 */
export function writePrivateFile(file: string, value: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, value, { mode: 0o600 });
  // `mode` applies only when the file is created; an existing file keeps its old bits otherwise.
  chmodSync(file, 0o600);
}

function readTrimmed(file: string): string | undefined {
  if (!existsSync(file)) return undefined;
  const value = readFileSync(file, "utf8").trim();
  return value.length > 0 ? value : undefined;
}

/** A kept secret or key, its file made its owner's alone again (it may have been copied in). */
function readPrivate(file: string): string | undefined {
  const value = readTrimmed(file);
  if (value !== undefined) chmodSync(file, 0o600);
  return value;
}

function generate(): string {
  // base64url is printable without spaces, which is all the voter asks of a key or a secret.
  return randomBytes(32).toString("base64url");
}

/**
 * The credentials of the cluster in `model.stateDir`: the secret and the admin key are generated once
 * per state dir and kept there, so restarts and later commands find the same ones. An admin key given
 * in `KeyLoad__Bootstrap__AdminKey` is used instead of the kept one; `adminKeyFromEnvironment` says so.
 */
export function loadCredentials(
  model: Pick<AppModel, "secretFile" | "adminKeyFile">,
  adminKeyFromEnvironment?: string,
): ClusterCredentials & { readonly adminKeyIsKept: boolean } {
  let secret = readPrivate(model.secretFile);
  if (secret === undefined) {
    secret = generate();
    writePrivateFile(model.secretFile, secret);
  }
  if (adminKeyFromEnvironment !== undefined) {
    return { secret, adminKey: adminKeyFromEnvironment, adminKeyIsKept: false };
  }
  let adminKey = readPrivate(model.adminKeyFile);
  if (adminKey === undefined) {
    adminKey = generate();
    writePrivateFile(model.adminKeyFile, adminKey);
  }
  return { secret, adminKey, adminKeyIsKept: true };
}

/** Reads the kept credentials of an existing cluster, for commands that restart one of its voters. */
export function readKeptCredentials(
  model: Pick<StateDirPaths, "secretFile" | "adminKeyFile">,
): ClusterCredentials | undefined {
  const secret = readTrimmed(model.secretFile);
  const adminKey = readTrimmed(model.adminKeyFile);
  return secret !== undefined && adminKey !== undefined ? { secret, adminKey } : undefined;
}
