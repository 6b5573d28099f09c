import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { constants, tmpdir } from "node:os";
import { dirname, join, relative, sep } from "node:path";
import { execa } from "execa";
import type { VoterName } from "./app-model.js";
import { ContainerRuntimeUnavailableError } from "./apphost-errors.js";
import { REPO_ROOT } from "./repo-layout.js";
import { supervisionEnvironment } from "./supervision.js";
import { appendNote, logSize } from "./voter-log-file.js";
import type { VoterExit, VoterLaunch } from "./voter-runtime.js";

/**
 * What a voter's container is, whichever client starts it (the `docker` command line for the CLI,
 * testcontainers for the testing API): its image, name, labels, mounts, user, environment and command.
 */

/**
 * The voters' image holds no files of its own but the directory skeleton: `/usr`, `/etc`, the
 * repository and the state dir are bind-mounted from the host, so the container runs the very Node.js
 * and sources a process voter runs, and no registry is needed. Bump the tag when the skeleton changes.
 */
export const VOTER_IMAGE_REPOSITORY = "keyload-voter-base";
export const VOTER_IMAGE_TAG = "1";
export const VOTER_IMAGE = `${VOTER_IMAGE_REPOSITORY}:${VOTER_IMAGE_TAG}`;

const SKELETON_DIRS = ["etc", "tmp", "proc", "sys", "dev", "usr", "run", "root", "home"];
/** Debian's merged /usr: these live under /usr, which is mounted. */
const SKELETON_LINKS: readonly (readonly [string, string])[] = [
  ["bin", "usr/bin"],
  ["sbin", "usr/sbin"],
  ["lib", "usr/lib"],
  ["lib64", "usr/lib64"],
];

/** Every container of a cluster carries its state dir, so it can be found again from that alone. */
export const STATE_DIR_LABEL = "io.keyload.state-dir";
export const VOTER_LABEL = "io.keyload.voter";

const CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/** Runs the voter with its stdout and stderr appended to its log file, as the process runtime does. */
const LOG_WRAPPER = 'log="$1"; shift; exec "$@" >>"$log" 2>&1';

/** The image's contents as a tar archive, for the engine to import. */
export async function voterImageArchive(): Promise<Buffer> {
  const root = mkdtempSync(join(tmpdir(), "keyload-image-"));
  try {
    for (const dir of SKELETON_DIRS) mkdirSync(join(root, dir));
    for (const [link, target] of SKELETON_LINKS) symlinkSync(target, join(root, link));
    const tar = await execa("tar", ["-C", root, "-c", "."], { encoding: "buffer", reject: false });
    if (tar.exitCode !== 0) throw new ContainerRuntimeUnavailableError(`tar failed: ${tar.stderr}`);
    return Buffer.from(tar.stdout);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** One name per voter and state dir, so two clusters side by side never touch each other's containers. */
export function containerNameOf(stateDir: string, voter: VoterName): string {
  const digest = createHash("sha256").update(stateDir).digest("hex").slice(0, 12);
  return `keyload-${digest}-${voter}`;
}

/** A host path the container sees at the same path. */
export interface VoterMount {
  readonly path: string;
  readonly readOnly: boolean;
}

export interface VoterContainerSpec {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly mounts: readonly VoterMount[];
  /** `uid:gid`: the invoking user, with the voter's own group where partitions need one. */
  readonly user: string;
  readonly workingDir: string;
  /** Mounted as a tmpfs: the image's skeleton is read by every container, so nothing writes there. */
  readonly tmpfs: string;
  readonly env: Readonly<Record<string, string>>;
  readonly command: readonly string[];
}

function isWithin(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !rel.startsWith(sep));
}

/**
 * The host paths a voter's container sees, each at its own path: the system (Node.js, its libraries,
 * /etc for name resolution) and the repository (with the transpiled sources, voter-build.ts) read-only,
 * the state dir (data dirs and logs) writable.
 */
function mountsFor(stateDir: string): VoterMount[] {
  const readOnly = ["/usr", "/etc", REPO_ROOT];
  // Node.js installed outside /usr (nvm, a tarball) is mounted from where it is.
  const nodePrefix = dirname(dirname(realpathSync(process.execPath)));
  if (!readOnly.some((dir) => isWithin(nodePrefix, dir))) readOnly.push(nodePrefix);
  return [...readOnly.map((path) => ({ path, readOnly: true })), { path: stateDir, readOnly: false }];
}

/**
 * The container of one voter. Whoever runs it also puts it on the host's network (so the voters'
 * loopback addresses, ports and partitions are the same as for processes) and in the host's pid
 * namespace (so pause, kill, state and supervision work on the same pid as for processes), and has
 * the engine remove it when it exits.
 */
export function voterContainerSpec(launch: VoterLaunch, nodeArgs: readonly string[]): VoterContainerSpec {
  const { voter, stateDir } = launch;
  const uid = process.getuid?.() ?? 0;
  const gid = launch.gid ?? process.getgid?.() ?? 0;
  return {
    name: containerNameOf(stateDir, voter.name),
    labels: { [STATE_DIR_LABEL]: stateDir, [VOTER_LABEL]: voter.name },
    mounts: mountsFor(stateDir),
    user: `${uid}:${gid}`,
    workingDir: REPO_ROOT,
    tmpfs: "/tmp",
    env: {
      PATH: CONTAINER_PATH,
      HOME: "/tmp",
      ...launch.env,
      ...(launch.supervised ? supervisionEnvironment() : {}),
    },
    command: [
      "/bin/sh",
      "-c",
      LOG_WRAPPER,
      "keyload-voter",
      voter.logFile,
      realpathSync(process.execPath),
      ...nodeArgs,
    ],
  };
}

/**
 * Creates what the container mounts but may not exist yet (the voter's data dir) and notes
 * the start in the voter's log; returns where this run's lines begin.
 */
export function noteContainerStart(launch: VoterLaunch, name: string): number {
  const { voter, supervised } = launch;
  mkdirSync(voter.dataDir, { recursive: true, mode: 0o700 });
  const logOffset = logSize(voter.logFile);
  appendNote(
    voter.logFile,
    voter.name,
    `starting ${voter.name} in container ${name}${supervised ? ` supervised by AppHost pid ${process.pid}` : " detached"}`,
  );
  return logOffset;
}

/** How a container's exit status reads as a voter's exit. */
export function exitOf(status: number): VoterExit {
  // The engine reports a voter killed by a signal as 128 + the signal's number.
  const signal =
    status > 128 ? Object.entries(constants.signals).find(([, n]) => n === status - 128)?.[0] : undefined;
  return signal ? { code: null, signal } : { code: status, signal: null };
}
