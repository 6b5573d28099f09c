import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * Which way the imports between the repository's modules may run. Each rule names a folder and the
 * folders its files (tests and test fixtures included) may import from; of the workspace packages only
 * `@keyload/contract` may be named, a package's own name in its own folder, and in tests and test
 * fixtures `@keyload/test-fixtures`. Folders without a rule (the voter wiring, the configuration, the
 * AppHost, the RF3 suite) compose the others and may import any of them.
 */
interface Rule {
  readonly dir: string;
  readonly may: readonly string[];
  /** Workspace packages besides `@keyload/contract` the folder may name: the package itself. */
  readonly packages?: readonly string[];
  readonly why: string;
}

const RULES: readonly Rule[] = [
  {
    dir: "node/src/raft",
    may: ["node/src/checksum"],
    why: "the consensus core is pure: it knows no storage, transport, state machine or wiring",
  },
  { dir: "node/src/checksum", may: [], why: "a leaf: the core and the storage both use it" },
  {
    dir: "node/src/requests",
    may: [],
    why: "what the HTTP edge and the state machine share, so it depends on neither",
  },
  {
    dir: "node/src/http",
    may: ["node/src/admission", "node/src/requests"],
    why: "the edge hands requests to its VoterService and knows neither the state machine nor the wiring",
  },
  {
    dir: "node/src/state",
    may: [
      "node/src/requests",
      "node/src/raft",
      "node/src/storage",
      "node/src/fs",
      "node/src/checksum",
      // Its crash tests run their children transpiled.
      "node/src/build",
    ],
    why: "the state machine does not know the HTTP edge, the transport or the wiring",
  },
  {
    dir: "node/src/peer",
    may: ["node/src/raft", "node/src/net"],
    why: "the transport owns its types (PeerAddress); the configuration is wiring and maps onto them",
  },
  {
    dir: "node/src/storage",
    // build: its crash tests run their children transpiled.
    may: ["node/src/raft", "node/src/checksum", "node/src/fs", "node/src/build"],
    why: "the log storage serves the core; the state machine and the wiring sit above it",
  },
  {
    dir: "node/src/sim",
    may: [
      "node/src/raft",
      "node/src/checksum",
      "node/src/storage",
      "node/src/voter",
      "node/src/state",
      "node/src/peer",
      "node/src/admission",
      "node/src/requests",
    ],
    why: "the simulator runs the core, the voter's driver and its command path on simulated storage, network and clock, its members named as the peer network names them",
  },
  { dir: "node/src/admission", may: ["node/src/fs"], why: "admission knows neither the edge nor the voter" },
  { dir: "node/src/fs", may: [], why: "a leaf" },
  { dir: "node/src/build", may: [], why: "a leaf: how a package's sources become what its processes run" },
  { dir: "node/src/net", may: [], why: "a leaf" },
  {
    dir: "client/src",
    may: [],
    packages: ["@keyload/client"],
    why: "the client shares only the contract with the voter: no voter source, not even its test fixtures",
  },
  { dir: "contract/src", may: [], why: "the contract depends on nothing of the repository" },
  {
    dir: "test-fixtures/src",
    may: [],
    why: "the fixtures every package's tests share depend on nothing of the repository",
  },
];

/** The package of fixtures the tests share, which only tests and test fixtures may name. */
const TEST_FIXTURES_PACKAGE = "@keyload/test-fixtures";

function isTestCode(file: string): boolean {
  return file.endsWith(".test.ts") || file.split("/").includes("test-fixtures");
}

const REPO = fileURLToPath(new URL("../../", import.meta.url));

/** Every module specifier a file names: static and dynamic imports, re-exports, require, new URL. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*|\bnew URL\(\s*)["']([^"']+)["']/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(join(REPO, dir), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts") && !file.split(/[\\/]/).includes("node_modules"))
    .map((file) => posix.join(dir, file.split("\\").join("/")));
}

function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(`${dir}/`);
}

/** The imports of `rule.dir` that run against it, as `file: specifier`. */
function violations(rule: Rule): string[] {
  const found: string[] = [];
  for (const file of sourceFiles(rule.dir)) {
    const text = readFileSync(join(REPO, file), "utf8");
    for (const [, specifier] of text.matchAll(SPECIFIER)) {
      if (specifier === undefined) continue;
      if (specifier.startsWith(".")) {
        const target = posix.normalize(posix.join(dirname(file), specifier));
        if (![rule.dir, ...rule.may].some((dir) => within(target, dir))) found.push(`${file}: ${specifier}`);
      } else if (specifier.startsWith("@keyload/")) {
        const name = specifier.split("/").slice(0, 2).join("/");
        const allowed =
          name === "@keyload/contract" ||
          rule.packages?.includes(name) ||
          (name === TEST_FIXTURES_PACKAGE && isTestCode(file));
        if (!allowed) found.push(`${file}: ${specifier}`);
      }
    }
  }
  return found;
}

describe("import directions", () => {
  for (const rule of RULES) {
    it(`${rule.dir} imports only ${[rule.dir, ...rule.may].join(", ")}: ${rule.why}`, () => {
      // A rule over a folder that moved would pass vacuously.
      expect(sourceFiles(rule.dir).length).toBeGreaterThan(0);
      expect(violations(rule)).toEqual([]);
    });
  }
});
