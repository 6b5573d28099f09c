import { statSync } from "node:fs";
import { afterAll, beforeAll } from "vitest";

/** The permission bits of `path`. */
export const modeOf = (path: string): number => statSync(path).mode & 0o777;

/**
 * Runs the file's tests under the usual umask (022), which leaves a directory created without a mode
 * open to everyone's reads, and puts the process's own back after them.
 */
export function withUsualUmask(): void {
  let umask: number;
  beforeAll(() => {
    umask = process.umask(0o022);
  });
  afterAll(() => {
    process.umask(umask);
  });
}
