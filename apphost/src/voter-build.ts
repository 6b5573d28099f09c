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

/** The packages a voter's process loads: the launcher's (this one), the voter's and the contract. */
const PACKAGES = ["contract", "node", "apphost"].map((name) => join(REPO_ROOT, name));

/** The launcher (voter-launcher.ts) as transpiled, whether this module runs from source or a build. */
const LAUNCHER = fileURLToPath(new URL("../dist/voter-launcher.js", import.meta.url));

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

/** The arguments to `node` that start one voter through its launcher, the sources transpiled first. */
export async function voterNodeArgs(): Promise<readonly string[]> {
  await build();
  return ["--enable-source-maps", LAUNCHER];
}
