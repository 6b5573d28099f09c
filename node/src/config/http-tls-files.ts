import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { ConfigError } from "./config-error.js";
import type { VoterConfig } from "./voter-config.js";

const CERT = "KeyLoad:Tls:HttpCertFile";
const KEY = "KeyLoad:Tls:HttpKeyFile";

/** The public port's certificate (chain) and key as read, PEM. */
export interface HttpTlsFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/**
 * Reads the `Tls` section's files and checks that they are a certificate and the private key of it;
 * null when TLS is off. Anything wrong is a ConfigError naming the setting, thrown before the voter
 * opens anything, rather than a TLS library's error from deep in the server's start.
 */
export function readHttpTlsFiles(tls: VoterConfig["tls"]): HttpTlsFiles | null {
  if (tls.httpCertFile === "" && tls.httpKeyFile === "") return null;
  const cert = readSetting(CERT, tls.httpCertFile);
  const key = readSetting(KEY, tls.httpKeyFile);
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch (err) {
    throw new ConfigError(CERT, `${tls.httpCertFile} is not a PEM certificate (${reason(err)})`);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw new ConfigError(KEY, `${tls.httpKeyFile} is not a PEM private key (${reason(err)})`);
  }
  if (!certificate.checkPrivateKey(privateKey)) {
    throw new ConfigError(KEY, `${tls.httpKeyFile} is not the private key of ${tls.httpCertFile}`);
  }
  return { cert, key };
}

function readSetting(name: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new ConfigError(name, `cannot read ${path} (${reason(err)})`);
  }
}

function reason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === "string" ? code : err instanceof Error ? err.message : String(err);
}
