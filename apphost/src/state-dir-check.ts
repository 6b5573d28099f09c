import { statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { StateDirError } from "./apphost-errors.js";

/** What is at `path`, or undefined when nothing is; a path that cannot be looked at is reported. */
function kindOf(path: string): "directory" | "other" | undefined {
  try {
    return statSync(path).isDirectory() ? "directory" : "other";
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    // ENOTDIR: a file somewhere along the path, where a directory should be.
    if (code === "ENOTDIR") return "other";
    throw new StateDirError(`${path} cannot be looked at (${code ?? (err as Error).message})`);
  }
}

/**
 * Refuses, before anything is written or wiped, a state dir `up` cannot use: one that is not a
 * directory, or whose parent is missing or not a directory. The AppHost creates the state dir itself
 * and nothing above it, so a mistyped path is named rather than made.
 */
export function assertUsableStateDir(stateDir: string): void {
  const root = resolve(stateDir);
  const kind = kindOf(root);
  if (kind === "directory") return;
  if (kind === "other") {
    throw new StateDirError(
      `the state dir ${root} is not a directory: name a directory, or a new one to create`,
    );
  }
  const parent = dirname(root);
  const parentKind = kindOf(parent);
  if (parentKind !== "directory") {
    throw new StateDirError(
      `the state dir ${root} cannot be created: ${parent} ${parentKind === undefined ? "does not exist" : "is not a directory"}`,
    );
  }
}
