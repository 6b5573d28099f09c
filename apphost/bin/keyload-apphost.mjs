#!/usr/bin/env node
// The AppHost command line. Like the voters it starts (src/voter-build.ts), it runs the workspace's
// current sources transpiled to each package's dist on plain Node, so an edit shows at the next
// command; only what changed is transpiled again.
import { fileURLToPath } from "node:url";

const PACKAGES = ["contract", "client", "node", "apphost"].map((name) =>
  fileURLToPath(new URL(`../../${name}`, import.meta.url)),
);

/** The transpiler (@keyload/node/build), from its own dist; on a fresh checkout, once through tsx. */
async function transpiler() {
  try {
    return await import("../../node/dist/build/index.js");
  } catch (err) {
    if (err?.code !== "ERR_MODULE_NOT_FOUND") throw err;
    const { tsImport } = await import("tsx/esm/api");
    return tsImport("../../node/src/build/index.ts", import.meta.url);
  }
}

const { TranspileError, transpilePackage } = await transpiler();
try {
  for (const dir of PACKAGES) await transpilePackage(dir);
} catch (err) {
  if (!(err instanceof TranspileError)) throw err;
  // As the CLI reports its own failures (cli.ts): the message, its code in brackets, and status 1.
  process.stderr.write(`apphost: ${err.message} [AppHostVoterBuild]\n`);
  process.exit(1);
}
await import("../dist/cli.js");
