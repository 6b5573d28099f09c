import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Where the AppHost finds the rest of the repository. The AppHost runs voters from their TypeScript
 * sources, so it is tied to the monorepo layout rather than to an installed package.
 */
export const REPO_ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));

/** The voter's entry point (`keyload-node`), run through tsx with the `source` export condition. */
export const VOTER_ENTRY = new URL("../../node/src/main.ts", import.meta.url);
