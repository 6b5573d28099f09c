// A Docker engine of CI's own: dockerd on its own socket, data root and exec root in a temp dir,
// leaving the host's iptables and bridges alone (the voters' containers use the host's network).
// Stopping it stops dockerd, kills whatever it started that outlived it, unmounts what it left
// mounted under the temp dir and removes the dir.
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { $, sleep } from "zx";
import { killTree } from "../process-group.mjs";

/** How long dockerd gets to stop its containers and its containerd before it is killed. */
const STOP_GRACE_MS = 30_000;

/**
 * Starts dockerd and waits up to `readyMs` for it to answer `docker version`, or until `cancelled()`.
 * `host` is its DOCKER_HOST; `up` says whether it answered; `stop()` (idempotent) takes it all down.
 * @param {{ readyMs: number, cancelled: () => boolean, note: (message: string) => void }} options
 */
export async function startPrivateEngine({ readyMs, cancelled, note }) {
  const dir = mkdtempSync(join(tmpdir(), "keyload-ci-engine-"));
  const host = `unix://${join(dir, "docker.sock")}`;
  const log = join(dir, "dockerd.log");
  const fd = openSync(log, "a");
  /** @type {import("zx").ProcessPromise} */
  let daemon;
  try {
    // Its own process group: a Ctrl-C at a terminal must not stop the engine before the tests have
    // removed their containers.
    daemon = $({ stdio: ["ignore", fd, fd], detached: true, nothrow: true, quiet: true })`exec dockerd ${[
      `--host=${host}`,
      `--data-root=${join(dir, "data")}`,
      `--exec-root=${join(dir, "exec")}`,
      `--pidfile=${join(dir, "dockerd.pid")}`,
      "--iptables=false",
      "--ip-masq=false",
      "--bridge=none",
    ]}`;
  } finally {
    closeSync(fd);
  }

  /** @type {Promise<void> | undefined} */
  let stopping;
  const stop = () => {
    stopping ??= stopEngine(daemon, dir, note);
    return stopping;
  };

  const deadline = Date.now() + readyMs;
  let up = false;
  while (!up && daemon.stage === "running" && !cancelled() && Date.now() < deadline) {
    const version = await $({
      env: { ...process.env, DOCKER_HOST: host },
      nothrow: true,
      quiet: true,
    })`docker version`;
    up = version.ok;
    if (!up) await sleep(500);
  }
  const logTail = () => {
    try {
      return readFileSync(log, "utf8").trimEnd().split("\n").slice(-20).join("\n");
    } catch {
      return "";
    }
  };
  return { host, up, logTail, stop };
}

/**
 * @param {import("zx").ProcessPromise} daemon
 * @param {string} dir
 * @param {(message: string) => void} note
 */
async function stopEngine(daemon, dir, note) {
  if (daemon.stage === "running") {
    // dockerd alone: it stops its containers, then its containerd, in order.
    daemon.child?.kill("SIGTERM");
    const timer = setTimeout(() => killTree(daemon), STOP_GRACE_MS);
    await daemon;
    clearTimeout(timer);
  }
  // containerd's shims are not dockerd's descendants once they detach; like everything the engine
  // starts, they name its dir on their command line.
  for (const pid of processesNaming(dir)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone in the meantime.
    }
  }
  // dockerd leaves at least its network namespace file bind-mounted under its exec root; the deepest
  // first.
  for (const mount of mountsUnder(dir).sort().reverse()) {
    const umount = await $({ nothrow: true, quiet: true })`umount -l ${mount}`;
    if (!umount.ok) note(`could not unmount ${mount}: ${umount.stderr.trim()}`);
  }
  // Never recurse into something still mounted there.
  const left = mountsUnder(dir);
  if (left.length > 0) {
    note(`left ${dir} in place: ${left.join(", ")} still mounted`);
    return;
  }
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch (error) {
    note(`could not remove ${dir}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** @param {string} dir */
function mountsUnder(dir) {
  return (
    readFileSync("/proc/mounts", "utf8")
      .split("\n")
      .map((line) => line.split(" ")[1])
      .filter((point) => point !== undefined)
      // /proc/mounts writes a space, tab, newline or backslash in a path as an octal escape.
      .map((point) =>
        point.replace(/\\([0-7]{3})/g, (_, octal) => String.fromCharCode(Number.parseInt(octal, 8))),
      )
      .filter((point) => point === dir || point.startsWith(`${dir}/`))
  );
}

/** @param {string} dir */
function processesNaming(dir) {
  const pids = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").includes(dir)) pids.push(Number(name));
    } catch {
      // Exited while being read.
    }
  }
  return pids;
}
