import { describe, expect, it } from "vitest";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { InvalidSettingError } from "./apphost-errors.js";
import { forwardConfig } from "./config-forwarding.js";
import { kubernetesManifests, kustomization, manifestYaml, sharedSettings } from "./publish-kubernetes.js";
import { applyVoterOverrides } from "./voter-image/launch-env.js";

const forwarded = forwardConfig([
  { name: "KeyLoad__Raft__ElectionTimeoutMs", value: "1500" },
  { name: "KeyLoad__CommandAdmission__MaxCommands", value: "100" },
  { name: "AppHost__Voters__voter2__KeyLoad__CommandAdmission__MaxCommands", value: "7" },
  { name: "AppHost__Voters__voter3__KeyLoad__HttpAdmission__MaxRequests", value: "5" },
]);
const credentials = { secret: "s".repeat(32), adminKey: "a".repeat(32) };
const ports = { httpPort: 7101, peerPort: 7201 };
const files = kubernetesManifests({
  forwarded,
  credentials,
  ports,
  image: "registry.example/keyload-voter:1",
});

type Doc = Record<string, any>;
function objectsOf(file: string): Doc[] {
  const manifest = files.find((f) => f.file === file)!;
  return parseAllDocuments(manifestYaml(manifest)).map((doc) => doc.toJS() as Doc);
}

describe("publish --target kubernetes", () => {
  it("writes objects that pass the Kubernetes schema", () => {
    for (const file of files)
      for (const object of file.objects) expect(() => object.validate()).not.toThrow();
    expect(files.map((f) => f.file)).toEqual([
      "rbac.yaml",
      "config.yaml",
      "secret.yaml",
      "services.yaml",
      "statefulset.yaml",
      "pod-disruption-budget.yaml",
    ]);
    expect(files.filter((f) => f.secret).map((f) => f.file)).toEqual(["secret.yaml"]);
  });

  it("runs three voters in a StatefulSet started in parallel, with claims, probes and no root", () => {
    const [set] = objectsOf("statefulset.yaml");
    expect(set).toMatchObject({ apiVersion: "apps/v1", kind: "StatefulSet", metadata: { name: "voter" } });
    expect(set!.spec).toMatchObject({
      replicas: 3,
      serviceName: "keyload-peers",
      podManagementPolicy: "Parallel",
    });
    expect(set!.spec.volumeClaimTemplates[0]).toMatchObject({
      metadata: { name: "data" },
      spec: { accessModes: ["ReadWriteOnce"] },
    });
    const pod = set!.spec.template.spec;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, fsGroup: 10001 });
    const [container] = pod.containers;
    expect(container.image).toBe("registry.example/keyload-voter:1");
    expect(container.envFrom).toEqual([{ configMapRef: { name: "keyload-config" } }]);
    expect(container.livenessProbe.httpGet).toEqual({ path: "/health/live", port: "http", scheme: "HTTP" });
    expect(container.readinessProbe.httpGet).toEqual({ path: "/health/ready", port: "http", scheme: "HTTP" });
    expect(container.env).toContainEqual({
      name: "KeyLoad__Node__HttpAdvertisedUrl",
      value: "http://$(POD_NAME).keyload-peers.$(POD_NAMESPACE).svc:7101",
    });
    expect(container.volumeMounts).toContainEqual({ name: "data", mountPath: "/data" });
    expect(container.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
  });

  it("gives peers stable names before they are ready, clients a Service, and keeps a quorum up", () => {
    const [peers, clients] = objectsOf("services.yaml");
    expect(peers!.spec).toMatchObject({ clusterIP: "None", publishNotReadyAddresses: true });
    expect(clients!.spec.ports).toEqual([{ name: "http", port: 7101, targetPort: "http" }]);
    const [budget] = objectsOf("pod-disruption-budget.yaml");
    expect(budget).toMatchObject({
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      spec: { maxUnavailable: 1 },
    });
    const [account, role, binding] = objectsOf("rbac.yaml");
    expect(account!.kind).toBe("ServiceAccount");
    expect(role!.rules).toContainEqual({
      apiGroups: [""],
      resources: ["configmaps"],
      resourceNames: ["keyload-bootstrap"],
      verbs: ["get", "update"],
    });
    expect(binding!.subjects).toEqual([{ kind: "ServiceAccount", name: "keyload-voter" }]);
  });

  it("keeps the credentials in a Secret and the settings, per-voter ones included, in a ConfigMap", () => {
    const [secret] = objectsOf("secret.yaml");
    expect(secret!.stringData).toEqual({
      cluster_secret: credentials.secret,
      admin_key: credentials.adminKey,
    });
    const [config] = objectsOf("config.yaml");
    expect(config!.data).toMatchObject({
      KeyLoad__Cluster__Voters:
        "voter1@voter-0.keyload-peers:7201,voter2@voter-1.keyload-peers:7201,voter3@voter-2.keyload-peers:7201",
      KeyLoad__Cluster__Secret_FILE: "/run/secrets/keyload/cluster_secret",
      KEYLOAD_BOOTSTRAP_RECORD: "configmap:keyload-bootstrap",
      KeyLoad__Raft__ElectionTimeoutMs: "1500",
    });
    expect(JSON.stringify(config)).not.toContain(credentials.secret);
    // Each pod's entrypoint resolves the shared environment into exactly what the AppHost forwards.
    const shared = sharedSettings(forwarded);
    for (const voter of ["voter1", "voter2", "voter3"] as const) {
      const own = applyVoterOverrides(shared, voter);
      delete own.KeyLoad__Node__Id;
      expect(own).toEqual(forwarded.voters[voter]);
    }
  });

  it("refuses certificates for some voters only: one pod template serves them all", () => {
    const mixed = forwardConfig([
      { name: "AppHost__Voters__voter1__KeyLoad__Tls__HttpCertFile", value: "/tls/cert.pem" },
      { name: "AppHost__Voters__voter1__KeyLoad__Tls__HttpKeyFile", value: "/tls/key.pem" },
    ]);
    expect(() => kubernetesManifests({ forwarded: mixed, credentials, ports, image: "i:1" })).toThrow(
      InvalidSettingError,
    );
  });

  it("names the files in a kustomization that can repoint the image", () => {
    expect(parseYaml(kustomization(files, "registry.example:5000/keyload-voter:1"))).toMatchObject({
      kind: "Kustomization",
      resources: files.map((f) => f.file),
      images: [{ name: "registry.example:5000/keyload-voter", newTag: "1" }],
    });
  });

  it("fails validation for an object the schema refuses", () => {
    const [set] = files.find((f) => f.file === "statefulset.yaml")!.objects as unknown as Doc[];
    const broken = Object.assign(Object.create(Object.getPrototypeOf(set)), set, {
      spec: { ...set!.spec, replicas: "three" },
    });
    expect(() => broken.validate()).toThrow();
  });
});
