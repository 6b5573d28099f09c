import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { InvalidSettingError, UnknownVoterError } from "./apphost-errors.js";
import {
  forwardConfig,
  readForwardedConfig,
  refuseLocalTls,
  withLocalVoterDefaults,
} from "./config-forwarding.js";

const settings = (env: Record<string, string>) =>
  Object.entries(env).map(([name, value]) => ({ name, value }));

describe("configuration forwarding", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("forwards every KeyLoad__ variable to all voters and nothing else", () => {
    const { voters } = forwardConfig(
      settings({ KeyLoad__Raft__ElectionTimeoutMs: "500", PATH: "/bin", KEYLOAD__log__level: "debug" }),
    );
    for (const env of Object.values(voters)) {
      expect(env).toEqual({ KeyLoad__Raft__ElectionTimeoutMs: "500", KEYLOAD__log__level: "debug" });
    }
  });

  it("gives a per-voter value to that voter alone, over the shared one whatever its case", () => {
    const { voters } = forwardConfig(
      settings({
        KeyLoad__CommandAdmission__MaxCommands: "100",
        AppHost__Voters__voter2__KeyLoad__commandadmission__maxcommands: "7",
        AppHost__Voters__voter3__KeyLoad__HttpAdmission__MaxRequests: "3",
      }),
    );
    expect(voters.voter1).toEqual({ KeyLoad__CommandAdmission__MaxCommands: "100" });
    expect(voters.voter2).toEqual({ KeyLoad__commandadmission__maxcommands: "7" });
    expect(voters.voter3).toEqual({
      KeyLoad__CommandAdmission__MaxCommands: "100",
      KeyLoad__HttpAdmission__MaxRequests: "3",
    });
  });

  it("takes the admin key for the cluster instead of forwarding it", () => {
    const forwarded = forwardConfig(settings({ KeyLoad__Bootstrap__AdminKey: "a-very-long-admin-key" }));
    expect(forwarded.adminKey).toBe("a-very-long-admin-key");
    expect(forwarded.voters.voter1).toEqual({});
  });

  it("refuses the settings the AppHost owns, naming the variable", () => {
    for (const name of [
      "KeyLoad__Node__HttpPort",
      "KeyLoad__Cluster__Secret",
      "KeyLoad__cluster__voters",
      "AppHost__Voters__voter1__KeyLoad__Node__DataDir",
      "AppHost__Voters__voter1__KeyLoad__Bootstrap__AdminKey",
    ]) {
      expect(() => forwardConfig(settings({ [name]: "x" }))).toThrow(InvalidSettingError);
      expect(() => forwardConfig(settings({ [name]: "x" }))).toThrow(name);
    }
  });

  it("refuses a bootstrap ID, shared or per voter: the AppHost decides which voter bootstraps", () => {
    for (const name of [
      "KeyLoad__Cluster__BootstrapId",
      "KEYLOAD__cluster__bootstrapid",
      "AppHost__Voters__voter2__KeyLoad__Cluster__BootstrapId",
    ]) {
      expect(() => forwardConfig(settings({ [name]: "other-cluster" }))).toThrow(InvalidSettingError);
      expect(() => forwardConfig(settings({ [name]: "other-cluster" }))).toThrow(
        new RegExp(`^${name}: cannot be set: .*cluster\\.json`),
      );
    }
  });

  it("refuses TLS for the voters the AppHost runs, and forwards it for publishing", () => {
    for (const name of ["KeyLoad__Tls__HttpCertFile", "AppHost__Voters__voter2__KeyLoad__tls__HttpKeyFile"]) {
      const forwarded = forwardConfig(settings({ [name]: "/etc/keyload/x.pem" }));
      expect(Object.values(forwarded.voters).some((env) => Object.keys(env).length > 0)).toBe(true);
      expect(() => refuseLocalTls(forwarded.voters)).toThrow(InvalidSettingError);
      expect(() => refuseLocalTls(forwarded.voters)).toThrow(/TLS is for a published deployment/);
    }
    expect(() =>
      refuseLocalTls(forwardConfig(settings({ KeyLoad__Log__Level: "debug" })).voters),
    ).not.toThrow();
  });

  it("runs local voters at debug unless the configuration sets a level, in whatever case", () => {
    expect(withLocalVoterDefaults({ KeyLoad__Raft__HeartbeatIntervalMs: "50" })).toEqual({
      KeyLoad__Log__Level: "debug",
      KeyLoad__Raft__HeartbeatIntervalMs: "50",
    });
    expect(withLocalVoterDefaults({ KEYLOAD__LOG__LEVEL: "warn" })).toEqual({ KEYLOAD__LOG__LEVEL: "warn" });
  });

  it("refuses an unknown voter and a malformed AppHost variable", () => {
    expect(() => forwardConfig(settings({ AppHost__Voters__voter9__KeyLoad__Raft__X: "1" }))).toThrow(
      UnknownVoterError,
    );
    expect(() => forwardConfig(settings({ AppHost__Ports: "1" }))).toThrow(InvalidSettingError);
  });

  it("reads .env, with the process environment winning, whatever the case of the name", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-forwarding-"));
    const envFile = join(dir, ".env");
    writeFileSync(
      envFile,
      [
        "# comments and quoting as dotenv reads them",
        "KeyLoad__CommandAdmission__MaxCommands=111",
        'KeyLoad__CommandAdmission__MaxCommandsPerTenant="77"',
        "AppHost__Voters__voter3__KeyLoad__HttpAdmission__MaxRequests=9",
      ].join("\n"),
    );
    const { voters } = readForwardedConfig(envFile, {
      KEYLOAD__COMMANDADMISSION__MAXCOMMANDS: "222",
      AppHost__Voters__voter2__KeyLoad__HttpAdmission__MaxRequests: "5",
    });
    expect(voters.voter1).toEqual({
      KEYLOAD__COMMANDADMISSION__MAXCOMMANDS: "222",
      KeyLoad__CommandAdmission__MaxCommandsPerTenant: "77",
    });
    expect(voters.voter2).toMatchObject({ KeyLoad__HttpAdmission__MaxRequests: "5" });
    expect(voters.voter3).toMatchObject({ KeyLoad__HttpAdmission__MaxRequests: "9" });
  });

  it("treats a missing .env as empty", () => {
    expect(readForwardedConfig("/nonexistent/.env", {}).voters.voter1).toEqual({});
  });
});
