import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { TranspileError, transpilePackage } from "@keyload/node/build";
import { VoterBuildError } from "./apphost-errors.js";
import { REPO_ROOT } from "./repo-layout.js";

/**
 * What a voter's process runs: the repository's current sources, transpiled before each start into
 * each package's `dist` (`@keyload/node/build`), which is quick when nothing changed. A voter so runs
 * what is in the tree, as it would through tsx, without tsx's loader in the voter and in each of its
 * worker threads, which cost a voter more than twice the CPU to start.
 */

/**
 * The packages the AppHost's processes load: the launcher's (this one), the voter's and the contract,
 * and the client, which the dashboard process (dashboard-daemon.ts) loads too.
 */
const PACKAGES = ["contract", "client", "node", "apphost"].map((name) => join(REPO_ROOT, name));

let building: Promise<void> | undefined;

/** One pass over the packages at a time: voters started together share it. */
function build(): Promise<void> {
  building ??= (async () => {
    try {
      for (const dir of PACKAGES) await transpilePackage(dir);
    } catch (err) {
      if (err instanceof TranspileError) throw new VoterBuildError(err.message, { cause: err });
      throw err;
    } finally {
      building = undefined;
    }
  })();
  return building;
}

/**
 * The arguments to `node` that run one of the AppHost's own entry modules (`voter-launcher.js`,
 * `dashboard-daemon.js`) as transpiled, the sources transpiled first, whether this module runs from
 * source or a build.
 */
export async function entryNodeArgs(entry: string): Promise<readonly string[]> {
  await build();
  return ["--enable-source-maps", fileURLToPath(new URL(`../dist/${entry}`, import.meta.url))];
}

/** The arguments to `node` that start one voter through its launcher (voter-launcher.ts). */
export function voterNodeArgs(): Promise<readonly string[]> {
  return entryNodeArgs("voter-launcher.js");
}
