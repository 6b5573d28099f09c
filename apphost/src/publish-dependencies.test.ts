import { existsSync, lstatSync, mkdtempSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { copyPackage, linkTree, productionTree } from "./publish-dependencies.js";
import { REPO_ROOT } from "./repo-layout.js";

describe("the voter's production dependencies, for its image", () => {
  const tree = productionTree(join(REPO_ROOT, "node"), REPO_ROOT);
  const names = tree.packages.map((p) => p.target.split("/node_modules/").at(-1));

  it("holds the runtime dependencies pnpm installed, not the dev or install-time ones", () => {
    expect(names).toEqual(
      expect.arrayContaining(["better-sqlite3", "bindings", "fastify", "pino", "prom-client"]),
    );
    for (const dev of [
      "fast-check",
      "tsx",
      "esbuild",
      "@types/better-sqlite3",
      "prebuild-install",
      "typescript",
    ]) {
      expect(names).not.toContain(dev);
    }
    expect(tree.workspace).toEqual([
      {
        name: "@keyload/contract",
        source: join(REPO_ROOT, "contract"),
        target: "node_modules/@keyload/contract",
      },
    ]);
    for (const { target } of tree.packages)
      expect(target).toMatch(/^node_modules\/\.pnpm\/[^/]+\/node_modules\//);
  });

  it("links each package to the very version pnpm resolved for it, by relative links", () => {
    const app = mkdtempSync(join(tmpdir(), "keyload-tree-"));
    try {
      linkTree(tree, app);
      const direct = join(app, "node_modules", "fastify");
      expect(lstatSync(direct).isSymbolicLink()).toBe(true);
      expect(readlinkSync(direct)).toMatch(/^\.pnpm\/fastify@[^/]+\/node_modules\/fastify$/);
      expect(tree.links.filter(({ target }) => target.startsWith("/"))).toEqual([]);
    } finally {
      rmSync(app, { recursive: true, force: true });
    }
  });

  it("copies a native package's module but not its sources and build leftovers", () => {
    const sqlite = tree.packages.find((p) => p.target.endsWith("/better-sqlite3"))!;
    const out = mkdtempSync(join(tmpdir(), "keyload-copy-"));
    try {
      copyPackage(sqlite.source, join(out, "better-sqlite3"));
      const at = (path: string) => existsSync(join(out, "better-sqlite3", path));
      expect(at("build/Release/better_sqlite3.node")).toBe(true);
      expect(at("lib/index.js")).toBe(true);
      expect(at("package.json")).toBe(true);
      expect(at("build/Release/obj.target")).toBe(false);
      expect(at("src/better_sqlite3.cpp")).toBe(false);
      expect(at("README.md")).toBe(false);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
