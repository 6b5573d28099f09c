import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A throwaway CA and a server certificate it signed, for localhost and 127.0.0.1, as PEM files. */
export interface TestCertificates {
  readonly dir: string;
  /** The CA's certificate: what a client trusts. */
  readonly ca: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** Removes the directory and everything in it. */
  remove(): void;
}

const CA_CONFIG = `[req]
distinguished_name = dn
prompt = no
[dn]
CN = KeyLoad test CA
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
`;

const SERVER_EXTENSIONS = `basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
authorityKeyIdentifier = keyid
`;

/** Makes them with the `openssl` CLI in a new temp dir (about 100 ms); the caller removes them. */
export function makeTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), "keyload-tls-"));
  const path = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  try {
    writeFileSync(path("ca.cnf"), CA_CONFIG);
    writeFileSync(path("server.ext"), SERVER_EXTENSIONS);
    openssl(
      "req",
      "-x509",
      "-config",
      "ca.cnf",
      "-extensions",
      "ca",
      ...newKey,
      "-keyout",
      "ca.key",
      "-out",
      "ca.pem",
      "-days",
      "2",
    );
    openssl(
      "req",
      "-new",
      "-config",
      "ca.cnf",
      ...newKey,
      "-keyout",
      "server.key",
      "-out",
      "server.csr",
      "-subj",
      "/CN=localhost",
    );
    openssl(
      "x509",
      "-req",
      "-in",
      "server.csr",
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-set_serial",
      "2",
      "-days",
      "2",
      "-extfile",
      "server.ext",
      "-out",
      "server.pem",
    );
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    dir,
    ca: readFileSync(path("ca.pem"), "utf8"),
    certFile: path("server.pem"),
    keyFile: path("server.key"),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
