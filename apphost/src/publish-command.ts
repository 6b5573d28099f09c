import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { PublishOutputError } from "./apphost-errors.js";
import { loadCredentials, writePrivateFile } from "./cluster-credentials.js";
import { readForwardedConfig } from "./config-forwarding.js";
import { composeModel, composeYaml } from "./publish-compose.js";
import { buildImageScript, buildVoterImage, stageVoterImage, VOTER_IMAGE_UID } from "./publish-image.js";
import { kubernetesManifests, kustomization, manifestYaml } from "./publish-kubernetes.js";
import { checkPublishable, type PublishPorts, type PublishTarget, SECRET_FILES } from "./publish-model.js";
import type { TerminalOutput } from "./terminal-output.js";

/** What `publish` was asked for (cli-options.ts). */
export interface PublishRequest {
  readonly target: PublishTarget;
  readonly outDir: string;
  /** Also build the image on the local Docker engine. */
  readonly build: boolean;
  readonly image: string;
  readonly ports: PublishPorts;
}

/** Marks a dir as publish's output, which a later publish may update in place. */
export const PUBLISH_MARKER = ".keyload-publish.json";

interface Marker {
  readonly publishedBy: "keyload-apphost";
  readonly targets: readonly PublishTarget[];
}

function readMarker(outDir: string): Marker | undefined {
  try {
    const parsed = JSON.parse(readFileSync(join(outDir, PUBLISH_MARKER), "utf8")) as Partial<Marker>;
    return parsed.publishedBy === "keyload-apphost" && Array.isArray(parsed.targets)
      ? { publishedBy: "keyload-apphost", targets: parsed.targets }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Makes sure `outDir` may be written: missing, empty, or an earlier publish's output (marked). Any other
 * dir is refused: publish replaces whole subdirs (image/, kubernetes/) and files (compose.yaml), which
 * in a dir of the user's (the repository root, say) would destroy their files. An earlier output is
 * updated in place and keeps its secrets/, so that a running deployment's credentials stay valid.
 */
export function prepareOutDir(outDir: string): Marker | undefined {
  if (!existsSync(outDir)) {
    mkdirSync(outDir, { recursive: true });
    return undefined;
  }
  if (!statSync(outDir).isDirectory()) throw new PublishOutputError(`--out ${outDir} is not a directory`);
  const marker = readMarker(outDir);
  if (marker === undefined && readdirSync(outDir).length > 0) {
    throw new PublishOutputError(
      `--out ${outDir} is not empty and holds no earlier publish output (no ${PUBLISH_MARKER}): ` +
        "publish into a new or empty dir, or into one it wrote before",
    );
  }
  return marker;
}

export interface PublishResult {
  readonly files: readonly string[];
  readonly adminKeyFile: string;
  readonly reusedSecrets: boolean;
}

/**
 * Writes the target's files, the credentials (made once per output dir, see docs/publish.md), the
 * image's build context and its build script; builds the image when asked. Throws AppHostError.
 */
export async function publish(
  request: PublishRequest,
  envFile: string,
  processEnv: NodeJS.ProcessEnv,
): Promise<PublishResult> {
  const { target, outDir, image, ports } = request;
  const marker = prepareOutDir(outDir);
  const forwarded = readForwardedConfig(envFile, processEnv);
  checkPublishable(forwarded);
  // Marked before anything is written: a publish that fails part way (sources that do not compile, say)
  // can be run again into the same dir.
  const targets = [...new Set([...(marker?.targets ?? []), target])];
  writeFileSync(
    join(outDir, PUBLISH_MARKER),
    `${JSON.stringify({ publishedBy: "keyload-apphost", targets })}\n`,
  );

  const secretsDir = join(outDir, "secrets");
  const secretFile = join(secretsDir, SECRET_FILES.clusterSecret);
  const adminKeyFile = join(secretsDir, SECRET_FILES.adminKey);
  const reusedSecrets = existsSync(secretFile);
  const credentials = loadCredentials({ secretFile, adminKeyFile }, forwarded.adminKey);
  if (forwarded.adminKey !== undefined) writePrivateFile(adminKeyFile, forwarded.adminKey);
  chmodSync(secretsDir, 0o700);

  const files: string[] = [];
  if (target === "compose") {
    writeFileSync(join(outDir, "compose.yaml"), composeYaml(composeModel({ forwarded, ports, image })));
    files.push("compose.yaml");
    // Compose bind-mounts secret files as they are: the image's user must own them to read them, and
    // only root may give them away. Otherwise docs/publish.md says what to run.
    if (process.getuid?.() === 0) {
      for (const file of [secretFile, adminKeyFile]) chownSync(file, VOTER_IMAGE_UID, VOTER_IMAGE_UID);
    }
  } else {
    const dir = join(outDir, "kubernetes");
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir);
    const manifests = kubernetesManifests({ forwarded, credentials, ports, image });
    for (const manifest of manifests) {
      const text = manifestYaml(manifest);
      if (manifest.secret) writePrivateFile(join(dir, manifest.file), text.trimEnd());
      else writeFileSync(join(dir, manifest.file), text);
      files.push(`kubernetes/${manifest.file}`);
    }
    writeFileSync(join(dir, "kustomization.yaml"), kustomization(manifests, image));
    files.push("kubernetes/kustomization.yaml");
  }

  await stageVoterImage(join(outDir, "image"));
  writeFileSync(join(outDir, "build-image.sh"), buildImageScript(image), { mode: 0o755 });
  chmodSync(join(outDir, "build-image.sh"), 0o755);
  files.push(
    "image/",
    "build-image.sh",
    `secrets/${SECRET_FILES.clusterSecret}`,
    `secrets/${SECRET_FILES.adminKey}`,
  );

  if (request.build) await buildVoterImage(join(outDir, "image"), image);
  return { files, adminKeyFile, reusedSecrets };
}

/** `pnpm apphost publish`: writes the output and says what to run next. */
export async function publishCommand(
  request: PublishRequest,
  envFile: string,
  output: TerminalOutput,
): Promise<number> {
  output.status(
    `publishing ${request.target} to ${request.outDir} (compiling the voter, staging its image)...`,
  );
  const result = await publish(request, envFile, process.env);
  output.clearStatus();
  const build = request.build ? [] : ["./build-image.sh"];
  // Compose bind-mounts the secret files as they are; only root could hand them to the image's user.
  const chown =
    request.target === "compose" && process.getuid?.() !== 0
      ? [`sudo chown ${VOTER_IMAGE_UID}:${VOTER_IMAGE_UID} secrets/*  # the image's user reads them`]
      : [];
  const next =
    request.target === "compose"
      ? [...build, ...chown, "docker-compose -p keyload up -d"]
      : [
          ...build,
          `docker push ${request.image}  # or load it into your cluster's nodes`,
          "kubectl apply -k kubernetes",
        ];
  output.line(
    [
      `Published ${request.target} to ${request.outDir}:`,
      ...result.files.map((file) => `  ${file}`),
      `  admin key  ${result.adminKeyFile}${result.reusedSecrets ? " (kept from the earlier publish)" : ""}`,
      ...(request.build ? [`Built image ${request.image}.`] : []),
      `Next, in ${request.outDir}:`,
      ...next.map((line) => `  ${line}`),
    ].join("\n"),
  );
  return 0;
}
