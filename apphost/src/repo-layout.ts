import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Where the AppHost finds the rest of the repository. The AppHost runs voters from the workspace's own
 * packages (voter-build.ts), so it is tied to the monorepo layout rather than to an installed package.
 */
export const REPO_ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));

/** The voter's entry point (`keyload-node`), as voter-build.ts transpiles it. */
export const VOTER_ENTRY = new URL("../../node/dist/main.js", import.meta.url);
