// The published @keyload/client as a consumer outside the workspace gets it: `pnpm pack` of the client
// and of @keyload/contract (which it depends on), the tarballs unpacked into a fresh project's
// node_modules, a strict nodenext consumer compiled against their declarations alone and run with node
// against a tiny HTTP server. Unpacked rather than installed: even offline, npm and pnpm want registry
// metadata (undici's, the contract's version) that a test cannot count on; the one third-party
// dependency of each, the client's undici and the contract's TypeBox (its schemas), is linked from the
// workspace instead.
import { execFile } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const STEP_MS = 60_000;

interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly license?: string;
  readonly private?: boolean;
  readonly exports?: unknown;
  readonly dependencies?: Readonly<Record<string, string>>;
}

function manifestOf(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Manifest;
}

/** `pnpm pack` of one workspace package into `dest`; its prepack script builds `dist` first. */
async function pack(pkg: string, dest: string): Promise<string> {
  const { name, version } = manifestOf(join(REPO_ROOT, pkg));
  await run("pnpm", ["pack", "--pack-destination", dest], {
    cwd: join(REPO_ROOT, pkg),
    timeout: STEP_MS,
  });
  return join(dest, `${name.replace("@", "").replace("/", "-")}-${version}.tgz`);
}

async function unpack(tarball: string, into: string): Promise<string[]> {
  mkdirSync(into, { recursive: true });
  await run("tar", ["-xzf", tarball, "-C", into, "--strip-components=1"], { timeout: STEP_MS });
  const { stdout } = await run("tar", ["-tzf", tarball], { timeout: STEP_MS });
  return stdout.split("\n").filter((line) => line !== "");
}

const CONSUMER_SOURCE = `
import { KeyLoadError } from "@keyload/contract";
import { InvalidArgumentError, KeyLoadClient, type PutResult } from "@keyload/client";

const endpoint = process.argv[2];
if (endpoint === undefined) throw new Error("usage: main.js <endpoint>");
const client = new KeyLoadClient({ endpoints: [endpoint], apiKey: "consumer-key", maxAttempts: 1 });
try {
  const health = await client.ready();
  const put: PutResult = await client.put("greeting", { text: "hello" });
  let refused: unknown;
  try {
    new KeyLoadClient({ endpoints: [] });
  } catch (error) {
    refused = error;
  }
  console.log(
    JSON.stringify({
      ready: health.ready,
      put,
      invalidArgument: refused instanceof InvalidArgumentError,
      // The contract's class, imported by the consumer itself: one copy of the contract is loaded.
      keyLoadError: refused instanceof KeyLoadError,
      code: refused instanceof KeyLoadError ? refused.code : undefined,
    }),
  );
} finally {
  await client.close();
}
`;

function bodyOf(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => {
      text += chunk;
    });
    request.on("end", () => resolve(text));
    request.on("error", reject);
  });
}

describe("the packed client", () => {
  let dir: string;
  let server: Server;
  const requests: { method: string; url: string; headers: IncomingMessage["headers"]; body: string }[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-pack-"));
    // Just enough of a voter: readiness and one catalog write.
    server = createServer(async (request, response) => {
      const body = await bodyOf(request);
      requests.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers, body });
      response.setHeader("content-type", "application/json");
      if (request.method === "GET" && request.url === "/health/ready") {
        response.end(JSON.stringify({ live: true, ready: true, detail: { role: "leader" } }));
      } else if (request.method === "PUT" && request.url === "/v1/catalog/greeting") {
        const commandId = request.headers["keyload-command-id"];
        response.end(JSON.stringify({ commandId, key: "greeting", version: 1 }));
      } else {
        response.statusCode = 404;
        response.end(JSON.stringify({ code: "NotFound", reason: "NotFound", message: "no such route" }));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("installs from its tarballs, compiles against its declarations and talks to a voter", async () => {
    const tarballs = join(dir, "tarballs");
    const [contractTgz, clientTgz] = await Promise.all([
      pack("contract", tarballs),
      pack("client", tarballs),
    ]);

    const consumer = join(dir, "consumer");
    const modules = join(consumer, "node_modules");
    const contractFiles = await unpack(contractTgz, join(modules, "@keyload", "contract"));
    const clientFiles = await unpack(clientTgz, join(modules, "@keyload", "client"));

    // What a registry would get: compiled code, declarations, README and licence; no sources or tests.
    for (const files of [contractFiles, clientFiles]) {
      expect(files).toEqual(
        expect.arrayContaining([
          "package/package.json",
          "package/README.md",
          "package/LICENSE",
          "package/dist/index.js",
          "package/dist/index.d.ts",
        ]),
      );
      expect(
        files.filter((file) => !/^package\/(dist\/|package\.json$|README\.md$|LICENSE$)/.test(file)),
      ).toEqual([]);
      expect(files.filter((file) => /\.test\.|\/(testing|test-fixtures)\//.test(file))).toEqual([]);
    }
    const contract = manifestOf(join(modules, "@keyload", "contract"));
    const client = manifestOf(join(modules, "@keyload", "client"));
    for (const manifest of [contract, client]) {
      expect(manifest.private).toBeUndefined();
      expect(manifest.license).toBe("Apache-2.0");
      // publishConfig's exports: dist only, without the workspace's `source` condition.
      expect(manifest.exports).toEqual({ ".": { types: "./dist/index.d.ts", default: "./dist/index.js" } });
    }
    // pnpm pack turns `workspace:*` into the contract's own version.
    expect(client.dependencies?.["@keyload/contract"]).toBe(contract.version);
    expect(Object.keys(client.dependencies ?? {}).sort()).toEqual(["@keyload/contract", "undici"]);
    // A runtime dependency: the schemas are values, which the contract's code and declarations import.
    expect(Object.keys(contract.dependencies ?? {})).toEqual(["@sinclair/typebox"]);

    symlinkSync(realpathSync(join(REPO_ROOT, "client", "node_modules", "undici")), join(modules, "undici"));
    mkdirSync(join(modules, "@sinclair"));
    symlinkSync(
      realpathSync(join(REPO_ROOT, "contract", "node_modules", "@sinclair", "typebox")),
      join(modules, "@sinclair", "typebox"),
    );
    mkdirSync(join(modules, "@types"));
    symlinkSync(
      realpathSync(join(REPO_ROOT, "node_modules", "@types", "node")),
      join(modules, "@types", "node"),
    );
    writeFileSync(
      join(consumer, "package.json"),
      JSON.stringify({
        name: "keyload-consumer",
        private: true,
        type: "module",
        dependencies: { "@keyload/client": client.version, "@keyload/contract": contract.version },
      }),
    );
    writeFileSync(
      join(consumer, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2023",
          lib: ["es2023"],
          types: ["node"],
          // The published declarations are checked too, not taken on trust.
          skipLibCheck: false,
          outDir: "dist",
        },
        include: ["main.ts"],
      }),
    );
    writeFileSync(join(consumer, "main.ts"), CONSUMER_SOURCE);
    const tsc = createRequire(join(REPO_ROOT, "package.json")).resolve("typescript/bin/tsc");
    await run(process.execPath, [tsc, "-p", consumer], { cwd: consumer, timeout: STEP_MS }).catch(
      (error: { stdout?: string }) => {
        throw new Error(`the consumer does not compile:\n${error.stdout ?? String(error)}`);
      },
    );

    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const { stdout } = await run(process.execPath, [join(consumer, "dist", "main.js"), endpoint], {
      cwd: consumer,
      timeout: STEP_MS,
    });
    const outcome = JSON.parse(stdout) as { put: { commandId: string } } & Record<string, unknown>;
    expect(outcome).toMatchObject({
      ready: true,
      put: { key: "greeting", version: 1 },
      invalidArgument: true,
      keyLoadError: true,
      code: "InvalidArgument",
    });
    const put = requests.find((request) => request.method === "PUT");
    expect(put?.headers.authorization).toBe("Bearer consumer-key");
    expect(put?.headers["keyload-command-id"]).toBe(outcome.put.commandId);
    expect(JSON.parse(put?.body ?? "null")).toEqual({ value: { text: "hello" } });
  }, 120_000);
});
