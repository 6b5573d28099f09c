import { createRequire } from "node:module";
import { extname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * Where the AppHost finds the rest of the repository. The AppHost runs voters from their TypeScript
 * sources, so it is tied to the monorepo layout rather than to an installed package.
 */
export const REPO_ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));

/** The voter's entry point (`keyload-node`), run through tsx with the `source` export condition. */
export const VOTER_ENTRY = new URL("../../node/src/main.ts", import.meta.url);

/** tsx's loader, resolved from this package so the voter runs from source wherever the AppHost is started. */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
/** The launcher beside this module: `.ts` when run from source, `.js` from a build. */
const LAUNCHER = fileURLToPath(
  new URL(`./voter-launcher${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

/** The arguments to `node` that start one voter through its launcher, whatever the runtime. */
export const VOTER_NODE_ARGS: readonly string[] = ["--conditions=source", "--import", TSX_LOADER, LAUNCHER];
