#!/usr/bin/env node
// CI's runner (`.ci/run` hands over to it once the dependencies are installed): runs a command,
// `npm run verify` unless one is given, in the repository root with the environment the strict
// suites need. As root with dockerd installed, it starts a private Docker engine first and sets
// DOCKER_HOST and KEYLOAD_REQUIRE_CONTAINER_RUNTIME=1 once the engine answers; as root with a working
// iptables it sets KEYLOAD_REQUIRE_PARTITIONS=1; KEYLOAD_REQUIRE_PRLIMIT=1 always, since util-linux's
// prlimit belongs to every system CI runs on, and KEYLOAD_REQUIRE_NODE24=1 always (the npm registry
// serves Node 24); as root, where `.ci/run` installs Debian's chromium, KEYLOAD_REQUIRE_BROWSER=1.
// Those suites then fail instead of skipping. Whatever
// way the command ends, even interrupted, the engine is taken down before this exits with the
// command's status. It says everything on stderr, so the command's last line (verify's
// `N passed, N failed`) stays the last line on stdout.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { $, which } from "zx";
import { exitStatus, handleInterrupts, interruptedBy, runInGroup, signalStatus } from "../process-group.mjs";
import { startPrivateEngine } from "./private-docker-engine.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const command = process.argv.length > 2 ? process.argv.slice(2) : ["npm", "run", "verify"];
/** How long the engine gets to answer. */
const ENGINE_READY_MS = 30_000;
/** How long the command gets to clean up once interrupted before its processes are killed. */
const COMMAND_GRACE_MS = 60_000;

/** @param {string} message */
function note(message) {
  process.stderr.write(`note: ${message}\n`);
}

handleInterrupts((signal) => note(`${signal}: stopping ${command.join(" ")}, then cleaning up`));

const asRoot = process.getuid?.() === 0;
/** @type {NodeJS.ProcessEnv} */
const env = { ...process.env };
/** @type {Awaited<ReturnType<typeof startPrivateEngine>> | undefined} */
let engine;
let status = 1;
try {
  if (asRoot && (await which("dockerd", { nothrow: true }))) {
    engine = await startPrivateEngine({ readyMs: ENGINE_READY_MS, cancelled: () => !!interruptedBy(), note });
    if (engine.up) {
      env.DOCKER_HOST = engine.host;
      env.KEYLOAD_REQUIRE_CONTAINER_RUNTIME = "1";
    } else if (!interruptedBy()) {
      note(`the Docker engine did not start; the container-runtime tests will skip\n${engine.logTail()}`);
      await engine.stop();
    }
  }
  env.KEYLOAD_REQUIRE_PRLIMIT = "1";
  // CI runs the unit and packaging projects on Node 24 too, and fails rather than skip them.
  env.KEYLOAD_REQUIRE_NODE24 = "1";
  if (asRoot) {
    env.KEYLOAD_REQUIRE_BROWSER = "1";
    const iptables = await $({ nothrow: true, quiet: true })`iptables -w -L OUTPUT -n`;
    if (iptables.ok) env.KEYLOAD_REQUIRE_PARTITIONS = "1";
    else note("iptables is missing or does not work; the partition tests will skip");
  }
  const interrupted = interruptedBy();
  if (interrupted === undefined) {
    // No stdin: the command runs in a session of its own, without the terminal.
    const output = await runInGroup(command, {
      cwd: root,
      stdio: ["ignore", "inherit", "inherit"],
      env,
      graceMs: COMMAND_GRACE_MS,
    });
    status = exitStatus(output);
  } else {
    status = signalStatus(interrupted);
  }
} catch (error) {
  note(`${error instanceof Error ? error.message : String(error)}`);
} finally {
  await engine?.stop();
}
process.exit(status);
