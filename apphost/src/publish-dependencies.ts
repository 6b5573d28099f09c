import { cpSync, existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, symlinkSync } from "node:fs";
import { basename, dirname, join, relative, sep } from "node:path";
import { ImageBuildError } from "./apphost-errors.js";

/**
 * A package's production dependencies as pnpm installed them, laid out again under an image's app
 * dir: every package from pnpm's virtual store at the same path below `node_modules/.pnpm`, and the
 * same relative symlinks between them, so that each package resolves exactly the versions pnpm
 * resolved for it (no hoisting, whose shadowing could hand a package another version). Workspace
 * packages are reported, not copied: they run from a build (publish-image.ts).
 */

export interface WorkspacePackage {
  readonly name: string;
  /** Its directory in the repository. */
  readonly source: string;
  /** Where it goes, relative to the app dir. */
  readonly target: string;
}

export interface ProductionTree {
  /** Store packages: copy `source` (filtered, copyPackage) to `target`. */
  readonly packages: readonly { readonly source: string; readonly target: string }[];
  readonly workspace: readonly WorkspacePackage[];
  /** Symlinks to make, `path` -> `target` (relative), both relative to the app dir. */
  readonly links: readonly { readonly path: string; readonly target: string }[];
}

/** Dependencies used only by a package's install script, never at run time. */
const INSTALL_TIME_ONLY: Readonly<Record<string, readonly string[]>> = {
  // Downloads a prebuilt binary when better-sqlite3 is installed; the binary is copied as built.
  "better-sqlite3": ["prebuild-install"],
};

interface Manifest {
  readonly name: string;
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
}

function manifestOf(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Manifest;
}

function isWithin(path: string, dir: string): boolean {
  return path === dir || path.startsWith(`${dir}${sep}`);
}

/** Where Node.js finds `name` from a module in `dir`: the path it finds (maybe a symlink), if any. */
function lookup(dir: string, name: string): string | undefined {
  for (let d = dir; ; d = dirname(d)) {
    if (basename(d) !== "node_modules") {
      const candidate = join(d, "node_modules", name);
      if (existsSync(candidate)) return candidate;
    }
    if (dirname(d) === d) return undefined;
  }
}

/**
 * The production dependency tree of the package in `rootDir`, which itself becomes the app dir.
 * `workspaceRoot` is the repository: packages in it, outside `node_modules`, are workspace packages.
 */
export function productionTree(rootDir: string, workspaceRoot: string): ProductionTree {
  const store = join(workspaceRoot, "node_modules", ".pnpm");
  const root = realpathSync(rootDir);
  const packages = new Map<string, string>();
  const workspace = new Map<string, WorkspacePackage>();
  const links = new Map<string, string>();

  /** Where a real package directory goes in the app dir. */
  const placeOf = (real: string): string => {
    if (real === root) return "";
    if (isWithin(real, store)) return join("node_modules", ".pnpm", relative(store, real));
    return join("node_modules", manifestOf(real).name);
  };
  /** Where a path found by lookup (inside some placed package's directory) goes in the app dir. */
  const imagePathOf = (found: string): string => {
    if (isWithin(found, store)) return join("node_modules", ".pnpm", relative(store, found));
    const owner = [root, ...[...workspace.values()].map((w) => w.source)].find((dir) => isWithin(found, dir));
    if (owner === undefined) throw new ImageBuildError(`${found} is outside the packages being staged`);
    return join(placeOf(owner), relative(owner, found));
  };

  const visit = (real: string): void => {
    const manifest = manifestOf(real);
    const skip = new Set(INSTALL_TIME_ONLY[manifest.name] ?? []);
    const optional = new Set([
      ...Object.keys(manifest.optionalDependencies ?? {}),
      // A peer pnpm did not install is one the package does without.
      ...Object.keys(manifest.peerDependencies ?? {}),
    ]);
    const names = new Set([...Object.keys(manifest.dependencies ?? {}), ...optional]);
    for (const name of names) {
      if (skip.has(name)) continue;
      const found = lookup(real, name);
      if (found === undefined) {
        if (optional.has(name)) continue;
        throw new ImageBuildError(
          `${manifest.name} depends on ${name}, which is not installed: run pnpm install`,
        );
      }
      const dep = realpathSync(found);
      const first = !packages.has(dep) && !workspace.has(dep) && dep !== root;
      if (first) {
        if (isWithin(dep, store)) packages.set(dep, placeOf(dep));
        else if (isWithin(dep, workspaceRoot) && !dep.includes(`${sep}node_modules${sep}`)) {
          workspace.set(dep, { name: manifestOf(dep).name, source: dep, target: placeOf(dep) });
        } else throw new ImageBuildError(`${name} (${dep}) is neither in pnpm's store nor in the workspace`);
      }
      if (lstatSync(found).isSymbolicLink()) {
        const path = imagePathOf(found);
        const target = placeOf(dep);
        if (path !== target) links.set(path, relative(dirname(path), target));
      }
      if (first) visit(dep);
    }
  };
  visit(root);

  return {
    packages: [...packages].map(([source, target]) => ({ source, target })),
    workspace: [...workspace.values()],
    links: [...links].map(([path, target]) => ({ path, target })),
  };
}

/** What a running package never reads: docs, type declarations, source maps, native build leftovers. */
function isRuntimeFile(relativePath: string, native: boolean): boolean {
  const parts = relativePath.split(sep);
  const name = parts.at(-1) ?? "";
  if (/\.(md|markdown|map|d\.ts|d\.mts|d\.cts)$/i.test(name) || name === ".github") return false;
  if (!native) return true;
  if (/\.(c|cc|cpp|h|hpp|o|a|gyp|gypi|mk)$/i.test(name) || name === "Makefile") return false;
  // A native module's build dir holds, besides the module itself, its objects and its build files.
  if (parts[0] === "build" && parts.length > 1) {
    return parts[1] === "Release" && (parts.length === 2 || (parts.length === 3 && name.endsWith(".node")));
  }
  return true;
}

/** Copies one store package, less what it never reads at run time. */
export function copyPackage(source: string, target: string): void {
  const native = existsSync(join(source, "binding.gyp"));
  mkdirSync(dirname(target), { recursive: true });
  cpSync(source, target, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (from) => from === source || isRuntimeFile(relative(source, from), native),
  });
}

/** Makes the tree's symlinks under `appDir`. */
export function linkTree(tree: ProductionTree, appDir: string): void {
  for (const { path, target } of tree.links) {
    const at = join(appDir, path);
    mkdirSync(dirname(at), { recursive: true });
    symlinkSync(target, at);
  }
}
