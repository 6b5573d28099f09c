import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { execa } from "execa";
import { ImageBuildError } from "./apphost-errors.js";
import { copyPackage, linkTree, productionTree } from "./publish-dependencies.js";
import { REPO_ROOT } from "./repo-layout.js";

/**
 * The voter's OCI image, from local files only: a build context whose Dockerfile starts `FROM scratch`
 * and copies a root filesystem staged here, holding this Node.js binary and the shared libraries it
 * and better-sqlite3 link against (as ldd lists them), the voter compiled to JavaScript with its
 * production dependencies, and the entrypoint (voter-image/). Unlike the container runtime's skeleton
 * (voter-container-spec.ts), it mounts nothing from the host, so it runs wherever it is copied.
 *
 * The voter is compiled by tsc rather than transpiled file by file as `up` runs it (voter-build.ts):
 * tsc refuses to stage sources that do not type-check.
 */

/** The image's user: not root, and no user of a usual host, so host files are not its by accident. */
export const VOTER_IMAGE_UID = 10001;
/** The voter's data dir in the image: a volume, the only place the voter writes. */
export const IMAGE_DATA_DIR = "/data/voter";
/** The volume mount point, and compose's shared bootstrap record (voter-image/bootstrap-record.ts). */
export const IMAGE_VOLUME = "/data";
export const IMAGE_BOOTSTRAP_DIR = "/bootstrap";
export const IMAGE_NODE = "/usr/local/bin/node";
export const IMAGE_ENTRYPOINT = "/app/launcher/entrypoint.js";

const NODE_PACKAGE = join(REPO_ROOT, "node");
const LAUNCHER_SOURCE = join(REPO_ROOT, "apphost", "src", "voter-image");

/** The voter's version (node/package.json), the default image tag. */
export function voterVersion(): string {
  const { version } = JSON.parse(readFileSync(join(NODE_PACKAGE, "package.json"), "utf8")) as {
    version: string;
  };
  return version;
}

export function defaultImageName(): string {
  return `keyload-voter:${voterVersion()}`;
}

function tscPath(): string {
  return createRequire(join(REPO_ROOT, "package.json")).resolve("typescript/bin/tsc");
}

async function tsc(what: string, args: readonly string[]): Promise<void> {
  const result = await execa(process.execPath, [tscPath(), ...args], { reject: false, cwd: REPO_ROOT });
  if (result.exitCode !== 0) {
    throw new ImageBuildError(
      `cannot compile ${what} for the image (tsc exited with ${result.exitCode}):\n${`${result.stdout}\n${result.stderr}`.trim()}`,
    );
  }
}

const EMIT_ONLY_JS = ["--declaration", "false", "--declarationMap", "false", "--sourceMap", "false"];

/** Compiles a workspace package with its own build config into `outDir`, leaving its dist alone. */
function compilePackage(packageDir: string, outDir: string): Promise<void> {
  return tsc(packageDir, [
    "-p",
    join(packageDir, "tsconfig.build.json"),
    "--outDir",
    outDir,
    ...EMIT_ONLY_JS,
  ]);
}

function compileLauncher(outDir: string): Promise<void> {
  return tsc("the image's entrypoint", [
    join(LAUNCHER_SOURCE, "entrypoint.ts"),
    ...["--outDir", outDir, "--rootDir", LAUNCHER_SOURCE],
    ...["--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2023"],
    ...["--strict", "--skipLibCheck", "--types", "node", ...EMIT_ONLY_JS],
  ]);
}

/** The absolute paths of the shared libraries a binary loads, its dynamic loader among them. */
async function sharedLibraries(binary: string): Promise<string[]> {
  const ldd = await execa("ldd", [binary], { reject: false });
  if (ldd.exitCode !== 0) {
    // Statically linked: nothing to copy.
    if (/not a dynamic executable/.test(`${ldd.stdout}${ldd.stderr}`)) return [];
    throw new ImageBuildError(`ldd ${binary} failed: ${ldd.stderr || ldd.stdout}`);
  }
  const missing = ldd.stdout.split("\n").filter((line) => line.includes("not found"));
  if (missing.length > 0)
    throw new ImageBuildError(`${binary} needs libraries this host lacks: ${missing.join("; ")}`);
  return ldd.stdout
    .split("\n")
    .map((line) => /(?:=>\s*)?(\/\S+)\s+\(0x[0-9a-f]+\)/.exec(line)?.[1])
    .filter((path): path is string => path !== undefined);
}

function nativeModules(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".node"))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** A file copied to the same path under `root`, following symlinks (a library's soname link). */
function copyInto(root: string, path: string, mode?: number): void {
  const target = join(root, path);
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(realpathSync(path), target);
  if (mode !== undefined) chmodSync(target, mode);
}

const PASSWD = `root:x:0:0:root:/root:/sbin/nologin\nkeyload:x:${VOTER_IMAGE_UID}:${VOTER_IMAGE_UID}:KeyLoad voter:/data:/sbin/nologin\n`;
const GROUP = `root:x:0:\nkeyload:x:${VOTER_IMAGE_UID}:\n`;
/** glibc reads no /etc/nsswitch.conf as "dns first"; the engine's /etc/hosts should come first. */
const NSSWITCH = "passwd: files\ngroup: files\nhosts: files dns\n";

export function dockerfile(version: string): string {
  return `# The KeyLoad voter, built from local files only: no base image is pulled (FROM scratch).
# Written by \`pnpm apphost publish\`, which staged rootfs/ (Node.js, its libraries, the compiled voter
# and its production dependencies) and owned/ (the dirs the voter writes). Build with ../build-image.sh.
FROM scratch
COPY rootfs/ /
COPY --chown=${VOTER_IMAGE_UID}:${VOTER_IMAGE_UID} owned/ /
ENV PATH=/usr/local/bin NODE_ENV=production KeyLoad__Node__DataDir=${IMAGE_DATA_DIR}
USER ${VOTER_IMAGE_UID}:${VOTER_IMAGE_UID}
WORKDIR /app
VOLUME ["${IMAGE_VOLUME}"]
# The voter's defaults: public HTTP, then the peer port (Raft and forwarding).
EXPOSE 7101 7201
ENTRYPOINT ["${IMAGE_NODE}", "${IMAGE_ENTRYPOINT}"]
LABEL org.opencontainers.image.title="keyload-voter" org.opencontainers.image.version="${version}"
`;
}

/**
 * Stages the image's build context in `contextDir` (replacing what is there): Dockerfile, rootfs/ and
 * owned/. Throws ImageBuildError.
 */
export async function stageVoterImage(contextDir: string): Promise<void> {
  rmSync(contextDir, { recursive: true, force: true });
  const rootfs = join(contextDir, "rootfs");
  const app = join(rootfs, "app");
  mkdirSync(app, { recursive: true });

  const tree = productionTree(NODE_PACKAGE, REPO_ROOT);
  await Promise.all([
    compilePackage(NODE_PACKAGE, join(app, "dist")),
    compileLauncher(join(app, "launcher")),
    ...tree.workspace.map((pkg) => compilePackage(pkg.source, join(app, pkg.target, "dist"))),
  ]);
  copyFileSync(join(NODE_PACKAGE, "package.json"), join(app, "package.json"));
  for (const pkg of tree.workspace)
    copyFileSync(join(pkg.source, "package.json"), join(app, pkg.target, "package.json"));
  for (const pkg of tree.packages) copyPackage(pkg.source, join(app, pkg.target));
  linkTree(tree, app);

  // This very Node.js, at the image's path whatever its path here.
  mkdirSync(join(rootfs, dirname(IMAGE_NODE)), { recursive: true });
  copyFileSync(realpathSync(process.execPath), join(rootfs, IMAGE_NODE));
  chmodSync(join(rootfs, IMAGE_NODE), 0o755);
  const libraries = new Set<string>();
  for (const binary of [process.execPath, ...nativeModules(app)]) {
    for (const library of await sharedLibraries(binary)) libraries.add(library);
  }
  for (const library of libraries) copyInto(rootfs, library, 0o755);

  mkdirSync(join(rootfs, "etc"), { recursive: true });
  writeFileSync(join(rootfs, "etc", "passwd"), PASSWD);
  writeFileSync(join(rootfs, "etc", "group"), GROUP);
  writeFileSync(join(rootfs, "etc", "nsswitch.conf"), NSSWITCH);
  mkdirSync(join(rootfs, "tmp"));
  chmodSync(join(rootfs, "tmp"), 0o1777);

  const owned = join(contextDir, "owned");
  for (const dir of [IMAGE_VOLUME, IMAGE_BOOTSTRAP_DIR])
    mkdirSync(join(owned, dir), { recursive: true, mode: 0o700 });
  writeFileSync(join(contextDir, "Dockerfile"), dockerfile(voterVersion()));
}

/** `docker build -t image contextDir`; throws ImageBuildError with what docker said. */
export async function buildVoterImage(contextDir: string, image: string): Promise<void> {
  const built = await execa("docker", ["build", "--tag", image, contextDir], { reject: false, all: true });
  if (built.exitCode !== 0) {
    const said = (built.all ?? "").trim().split("\n").slice(-15).join("\n");
    throw new ImageBuildError(
      `docker build of ${image} failed${built.exitCode === undefined ? " (is docker installed?)" : ""}:\n${said}`,
    );
  }
}

/** The script that builds the image from the published build context, for those without the AppHost. */
export function buildImageScript(image: string): string {
  return `#!/bin/sh
# Builds the KeyLoad voter image from ./image, a FROM-scratch build context: nothing is pulled.
# KEYLOAD_VOTER_IMAGE names the image (compose.yaml reads the same variable).
set -eu
cd "$(dirname "$0")"
exec docker build --tag "\${KEYLOAD_VOTER_IMAGE:-${image}}" image
`;
}
