import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type ApiResponse,
  ConfigMapRecord,
  DirectoryRecord,
  type KubernetesApi,
  recordFromSpec,
} from "./bootstrap-record.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** An API server holding ConfigMaps, with resourceVersion conflicts, and a hook before each call. */
function fakeApi(before: (method: string) => void = () => {}): {
  api: KubernetesApi;
  maps: Map<string, any>;
} {
  const maps = new Map<string, any>();
  let version = 0;
  const api: KubernetesApi = async (method, path, body): Promise<ApiResponse> => {
    before(method);
    const request = body as any;
    if (method === "POST") {
      const name = request.metadata.name;
      if (maps.has(name)) return { status: 409, body: { message: "already exists" } };
      maps.set(name, { ...request, metadata: { ...request.metadata, resourceVersion: String(++version) } });
      return { status: 201, body: maps.get(name) };
    }
    const name = path.replace(/^configmaps\//, "");
    const current = maps.get(name);
    if (current === undefined) return { status: 404, body: { message: "not found" } };
    if (method === "GET") return { status: 200, body: structuredClone(current) };
    if (request.metadata.resourceVersion !== current.metadata.resourceVersion) {
      return { status: 409, body: { message: "the object has been modified" } };
    }
    maps.set(name, { ...request, metadata: { ...request.metadata, resourceVersion: String(++version) } });
    return { status: 200, body: maps.get(name) };
  };
  return { api, maps };
}

describe("the bootstrap record", () => {
  it("in a shared dir: one cluster ID for all, and who has started", async () => {
    const dir = mkdtempSync(join(tmpdir(), "keyload-record-"));
    dirs.push(dir);
    const [a, b] = [new DirectoryRecord(dir), new DirectoryRecord(dir)];
    const [first, second] = await Promise.all([a.read("voter1"), b.read("voter2")]);
    expect(first).toEqual({ clusterId: second.clusterId, started: false });
    await a.markStarted("voter1");
    await a.markStarted("voter1");
    expect(await b.read("voter1")).toEqual({ clusterId: first.clusterId, started: true });
    expect(await b.read("voter2")).toEqual({ clusterId: first.clusterId, started: false });
    expect(readdirSync(dir).sort()).toEqual(["cluster-id", "started-voter1"]);
  });

  it("in a ConfigMap: created once, and voters recording themselves at once keep each other's entry", async () => {
    const { api, maps } = fakeApi();
    const records = ["voter1", "voter2", "voter3"].map(() => new ConfigMapRecord(api, "keyload-bootstrap"));
    const states = await Promise.all(records.map((r, i) => r.read(`voter${i + 1}`)));
    expect(new Set(states.map((s) => s.clusterId)).size).toBe(1);
    expect(states.every((s) => !s.started)).toBe(true);
    await Promise.all(records.map((r, i) => r.markStarted(`voter${i + 1}`)));
    const data = maps.get("keyload-bootstrap").data;
    expect(Object.keys(data).sort()).toEqual([
      "clusterId",
      "started.voter1",
      "started.voter2",
      "started.voter3",
    ]);
    expect(await records[0]!.read("voter2")).toEqual({ clusterId: states[0]!.clusterId, started: true });
  });

  it("in a ConfigMap: says what the API server refused", async () => {
    const forbidden: KubernetesApi = async () => ({
      status: 403,
      body: { message: "configmaps is forbidden" },
    });
    await expect(new ConfigMapRecord(forbidden, "keyload-bootstrap").read("voter1")).rejects.toThrow(
      /cannot read ConfigMap keyload-bootstrap: HTTP 403 configmaps is forbidden/,
    );
  });

  it("is named by KEYLOAD_BOOTSTRAP_RECORD", () => {
    expect(recordFromSpec(undefined, {})).toBeUndefined();
    expect(recordFromSpec("dir:/bootstrap", {})).toBeInstanceOf(DirectoryRecord);
    expect(() => recordFromSpec("configmap:keyload-bootstrap", {})).toThrow(/only in a pod/);
    expect(() => recordFromSpec("dir:relative", {})).toThrow(/expected dir:\/absolute\/path/);
    expect(() => recordFromSpec("etcd:x", {})).toThrow(/KEYLOAD_BOOTSTRAP_RECORD=etcd:x/);
  });
});
