import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadCredentials } from "./cluster-credentials.js";

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const modeOf = (file: string) => statSync(file).mode & 0o777;

describe("the cluster's credentials", () => {
  it("generates the secret and the admin key once, readable by their owner alone", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-credentials-"));
    const model = { secretFile: join(dir, "cluster.secret"), adminKeyFile: join(dir, "admin.key") };
    const first = loadCredentials(model);
    expect(loadCredentials(model)).toEqual(first);
    expect([modeOf(model.secretFile), modeOf(model.adminKeyFile)]).toEqual([0o600, 0o600]);
    // The file holds the key and nothing else, for a script that reads it as it is.
    expect(readFileSync(model.adminKeyFile, "utf8")).toBe(first.adminKey);
  });

  it("makes kept files that others could read theirs alone again, keeping what they hold", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-credentials-"));
    const model = { secretFile: join(dir, "cluster.secret"), adminKeyFile: join(dir, "admin.key") };
    writeFileSync(model.secretFile, "a-secret-someone-copied-in\n", { mode: 0o644 });
    writeFileSync(model.adminKeyFile, "a-key-someone-copied-in\n", { mode: 0o644 });
    expect(loadCredentials(model)).toMatchObject({
      secret: "a-secret-someone-copied-in",
      adminKey: "a-key-someone-copied-in",
    });
    expect([modeOf(model.secretFile), modeOf(model.adminKeyFile)]).toEqual([0o600, 0o600]);
    expect(readFileSync(model.adminKeyFile, "utf8")).toBe("a-key-someone-copied-in\n");
  });
});
