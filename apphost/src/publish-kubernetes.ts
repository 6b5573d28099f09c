import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { Role } from "kubernetes-models/rbac.authorization.k8s.io/v1/Role";
import { RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { stringify } from "yaml";
import type { ClusterCredentials } from "./app-model.js";
import { VOTER_NAMES } from "./app-model.js";
import { InvalidSettingError } from "./apphost-errors.js";
import type { ForwardedConfig } from "./config-forwarding.js";
import { IMAGE_DATA_DIR, IMAGE_VOLUME, VOTER_IMAGE_UID } from "./publish-image.js";
import {
  BOOTSTRAP_RECORD_VARIABLE,
  type PublishPorts,
  SECRET_FILES,
  schemeOf,
  secretFileSettings,
  voterIndex,
} from "./publish-model.js";

/**
 * `publish --target kubernetes`: a StatefulSet of the three voters, pod `voter-<i>` being voter<i+1>
 * (the entrypoint derives the name from the pod's), with a headless Service for their stable peer
 * names, a Service for clients, a PodDisruptionBudget, the settings in a ConfigMap and the credentials
 * in a Secret. Namespace-free: apply them in the namespace of your choice.
 */

export const NAMES = {
  statefulSet: "voter",
  peers: "keyload-peers",
  clients: "keyload",
  config: "keyload-config",
  credentials: "keyload-credentials",
  serviceAccount: "keyload-voter",
  bootstrapRole: "keyload-bootstrap-record",
  /** Made by the first voter to start (voter-image/bootstrap-record.ts), not by these manifests. */
  bootstrapRecord: "keyload-bootstrap",
  disruptionBudget: "keyload-voters",
} as const;

const LABELS = { "app.kubernetes.io/name": "keyload", "app.kubernetes.io/component": "voter" };
const SECRETS_DIR = "/run/secrets/keyload";

/** A typed model that checks itself against the Kubernetes schema (kubernetes-models). */
export interface KubernetesObject {
  validate(): void;
  toJSON(): unknown;
}

export interface ManifestFile {
  readonly file: string;
  readonly objects: readonly KubernetesObject[];
  /** Holds credentials: written readable by its owner only. */
  readonly secret?: boolean;
}

export interface KubernetesInputs {
  readonly forwarded: ForwardedConfig;
  readonly credentials: ClusterCredentials;
  readonly ports: PublishPorts;
  readonly image: string;
}

const podName = (i: number): string => `${NAMES.statefulSet}-${i}`;

/**
 * The ConfigMap's settings: one environment for the three pods, so what differs per voter is kept as
 * the contract writes it, `AppHost__Voters__<voter>__KeyLoad__...`, which each voter's entrypoint
 * applies to itself (voter-image/launch-env.ts).
 */
export function sharedSettings(forwarded: ForwardedConfig): Record<string, string> {
  const [first, ...others] = VOTER_NAMES.map((v) => forwarded.voters[v]);
  const settings: Record<string, string> = {};
  const same = (name: string): boolean => others.every((env) => env[name] === first![name]);
  for (const [name, value] of Object.entries(first!)) if (same(name)) settings[name] = value;
  for (const voter of VOTER_NAMES) {
    for (const [name, value] of Object.entries(forwarded.voters[voter])) {
      if (settings[name] !== value) settings[`AppHost__Voters__${voter}__${name}`] = value;
    }
  }
  return settings;
}

/** One scheme for the pod template's advertised URL and probes. */
function schemeFor(forwarded: ForwardedConfig): "http" | "https" {
  const schemes = new Set(VOTER_NAMES.map((v) => schemeOf(forwarded.voters[v])));
  if (schemes.size > 1) {
    throw new InvalidSettingError(
      "AppHost__Voters__<voter>__KeyLoad__Tls__HttpCertFile",
      "on Kubernetes the voters share one pod template: give every voter a certificate, or none",
    );
  }
  return schemes.has("https") ? "https" : "http";
}

export function kubernetesManifests({
  forwarded,
  credentials,
  ports,
  image,
}: KubernetesInputs): ManifestFile[] {
  const scheme = schemeFor(forwarded);
  const selector = { matchLabels: LABELS };
  const peers = VOTER_NAMES.map(
    (v) => `${v}@${podName(voterIndex(v))}.${NAMES.peers}:${ports.peerPort}`,
  ).join(",");
  const metadata = (name: string) => ({ name, labels: LABELS });

  const serviceAccount = new ServiceAccount({ metadata: metadata(NAMES.serviceAccount) });
  // The bootstrap record: the entrypoint creates it, then reads and updates it by name.
  const role = new Role({
    metadata: metadata(NAMES.bootstrapRole),
    rules: [
      { apiGroups: [""], resources: ["configmaps"], verbs: ["create"] },
      {
        apiGroups: [""],
        resources: ["configmaps"],
        resourceNames: [NAMES.bootstrapRecord],
        verbs: ["get", "update"],
      },
    ],
  });
  const roleBinding = new RoleBinding({
    metadata: metadata(NAMES.bootstrapRole),
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: NAMES.bootstrapRole },
    subjects: [{ kind: "ServiceAccount", name: NAMES.serviceAccount }],
  });

  const config = new ConfigMap({
    metadata: metadata(NAMES.config),
    data: {
      ...sharedSettings(forwarded),
      KeyLoad__Node__HttpHost: "0.0.0.0",
      KeyLoad__Node__HttpPort: String(ports.httpPort),
      KeyLoad__Node__PeerHost: "0.0.0.0",
      KeyLoad__Node__PeerPort: String(ports.peerPort),
      KeyLoad__Node__DataDir: IMAGE_DATA_DIR,
      KeyLoad__Cluster__Voters: peers,
      ...secretFileSettings(SECRETS_DIR),
      [BOOTSTRAP_RECORD_VARIABLE]: `configmap:${NAMES.bootstrapRecord}`,
    },
  });
  const secret = new Secret({
    metadata: metadata(NAMES.credentials),
    type: "Opaque",
    stringData: {
      [SECRET_FILES.clusterSecret]: credentials.secret,
      [SECRET_FILES.adminKey]: credentials.adminKey,
    },
  });

  const servicePorts = [
    { name: "http", port: ports.httpPort, targetPort: "http" },
    { name: "peer", port: ports.peerPort, targetPort: "peer" },
  ];
  const peerService = new Service({
    metadata: metadata(NAMES.peers),
    spec: {
      clusterIP: "None",
      // Peers must find each other before they are ready: readiness needs a leader, which needs them.
      publishNotReadyAddresses: true,
      selector: LABELS,
      ports: servicePorts,
    },
  });
  const clientService = new Service({
    metadata: metadata(NAMES.clients),
    spec: { type: "ClusterIP", selector: LABELS, ports: [servicePorts[0]!] },
  });

  const probe = (path: string, periodSeconds: number, failureThreshold: number) => ({
    httpGet: { path, port: "http", scheme: scheme === "https" ? ("HTTPS" as const) : ("HTTP" as const) },
    periodSeconds,
    timeoutSeconds: 3,
    failureThreshold,
  });
  const statefulSet = new StatefulSet({
    metadata: metadata(NAMES.statefulSet),
    spec: {
      serviceName: NAMES.peers,
      replicas: VOTER_NAMES.length,
      // OrderedReady would wait for voter-0 to be ready before starting voter-1, and it cannot be
      // ready without a quorum.
      podManagementPolicy: "Parallel",
      updateStrategy: { type: "RollingUpdate" },
      selector,
      template: {
        metadata: { labels: LABELS },
        spec: {
          serviceAccountName: NAMES.serviceAccount,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: VOTER_IMAGE_UID,
            runAsGroup: VOTER_IMAGE_UID,
            // The data volume and the credentials are the voter's group's.
            fsGroup: VOTER_IMAGE_UID,
            seccompProfile: { type: "RuntimeDefault" },
          },
          terminationGracePeriodSeconds: 30,
          // One voter per node where the nodes allow it: losing a node then loses one voter, not a quorum.
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  podAffinityTerm: { labelSelector: selector, topologyKey: "kubernetes.io/hostname" },
                },
              ],
            },
          },
          containers: [
            {
              name: "voter",
              image,
              imagePullPolicy: "IfNotPresent",
              ports: [
                { name: "http", containerPort: ports.httpPort },
                { name: "peer", containerPort: ports.peerPort },
              ],
              envFrom: [{ configMapRef: { name: NAMES.config } }],
              env: [
                { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
                { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
                // Where clients anywhere in the cluster reach this voter (peers hand it out as leader hint).
                {
                  name: "KeyLoad__Node__HttpAdvertisedUrl",
                  value: `${scheme}://$(POD_NAME).${NAMES.peers}.$(POD_NAMESPACE).svc:${ports.httpPort}`,
                },
              ],
              volumeMounts: [
                { name: "data", mountPath: IMAGE_VOLUME },
                { name: "credentials", mountPath: SECRETS_DIR, readOnly: true },
                { name: "tmp", mountPath: "/tmp" },
              ],
              // A voter replaying a long log or installing a snapshot is not dead: up to 150 s to answer.
              startupProbe: probe("/health/live", 5, 30),
              livenessProbe: probe("/health/live", 10, 3),
              readinessProbe: probe("/health/ready", 5, 3),
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ["ALL"] },
              },
              // Requests only: a memory limit under what admission lets a voter hold would kill it
              // instead of refusing work (HttpAdmission's MaxModeledBytes).
              resources: { requests: { cpu: "250m", memory: "512Mi" } },
            },
          ],
          volumes: [
            {
              name: "credentials",
              secret: { secretName: NAMES.credentials, defaultMode: 0o440 },
            },
            { name: "tmp", emptyDir: {} },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: "data", labels: LABELS },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "10Gi" } } },
        },
      ],
    },
  });
  const disruptionBudget = new PodDisruptionBudget({
    metadata: metadata(NAMES.disruptionBudget),
    // Two of three keep a quorum.
    spec: { maxUnavailable: 1, selector },
  });

  return [
    { file: "rbac.yaml", objects: [serviceAccount, role, roleBinding] },
    { file: "config.yaml", objects: [config] },
    { file: "secret.yaml", objects: [secret], secret: true },
    { file: "services.yaml", objects: [peerService, clientService] },
    { file: "statefulset.yaml", objects: [statefulSet] },
    { file: "pod-disruption-budget.yaml", objects: [disruptionBudget] },
  ];
}

/** Every object's YAML, one document each. Validates them first (throws on a schema violation). */
export function manifestYaml(file: ManifestFile): string {
  for (const object of file.objects) object.validate();
  return file.objects.map((object) => stringify(object.toJSON(), { lineWidth: 0 })).join("---\n");
}

/** kustomize's index of the files, which also lets `kustomize edit set image` point at a registry. */
export function kustomization(files: readonly ManifestFile[], image: string): string {
  const colon = image.lastIndexOf(":");
  const [name, tag] =
    colon > image.lastIndexOf("/") ? [image.slice(0, colon), image.slice(colon + 1)] : [image, undefined];
  return stringify(
    {
      apiVersion: "kustomize.config.k8s.io/v1beta1",
      kind: "Kustomization",
      resources: files.map((f) => f.file),
      images: [{ name, newName: name, ...(tag === undefined ? {} : { newTag: tag }) }],
    },
    { lineWidth: 0 },
  );
}
