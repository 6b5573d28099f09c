import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTestCertificates, type TestCertificates } from "@keyload/test-fixtures";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "./config-error.js";
import { readHttpTlsFiles } from "./http-tls-files.js";

let certs: TestCertificates;
beforeAll(() => {
  certs = makeTestCertificates();
});
afterAll(() => certs.remove());

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("readHttpTlsFiles", () => {
  it("reads nothing when TLS is off, and a certificate with its own key when on", () => {
    expect(readHttpTlsFiles({ httpCertFile: "", httpKeyFile: "" })).toBeNull();
    const tls = readHttpTlsFiles({ httpCertFile: certs.certFile, httpKeyFile: certs.keyFile });
    expect(tls?.cert.equals(readFileSync(certs.certFile))).toBe(true);
    expect(tls?.key.equals(readFileSync(certs.keyFile))).toBe(true);
  });

  it("names the setting whose file is missing, not a certificate, or not the certificate's key", () => {
    const missing = configError(() =>
      readHttpTlsFiles({ httpCertFile: join(certs.dir, "absent.pem"), httpKeyFile: certs.keyFile }),
    );
    expect(missing.key).toBe("KeyLoad:Tls:HttpCertFile");
    expect(missing.message).toContain("cannot read");
    expect(missing.message).toContain("ENOENT");

    const notPem = join(certs.dir, "not.pem");
    writeFileSync(notPem, "not a certificate\n");
    const badCert = configError(() => readHttpTlsFiles({ httpCertFile: notPem, httpKeyFile: certs.keyFile }));
    expect(badCert.key).toBe("KeyLoad:Tls:HttpCertFile");
    expect(badCert.message).toContain("is not a PEM certificate");
    const badKey = configError(() => readHttpTlsFiles({ httpCertFile: certs.certFile, httpKeyFile: notPem }));
    expect(badKey.key).toBe("KeyLoad:Tls:HttpKeyFile");
    expect(badKey.message).toContain("is not a PEM private key");

    const otherKey = join(certs.dir, "other.key");
    execFileSync("openssl", [
      "genpkey",
      "-algorithm",
      "EC",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-out",
      otherKey,
    ]);
    const mismatched = configError(() =>
      readHttpTlsFiles({ httpCertFile: certs.certFile, httpKeyFile: otherKey }),
    );
    expect(mismatched.key).toBe("KeyLoad:Tls:HttpKeyFile");
    expect(mismatched.message).toContain("is not the private key of");
    // The key's contents never appear in the message.
    expect(mismatched.message).not.toContain("PRIVATE KEY");
  });
});
