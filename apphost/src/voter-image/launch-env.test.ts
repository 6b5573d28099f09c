import { describe, expect, it } from "vitest";
import {
  applyVoterOverrides,
  LaunchError,
  readSettingFiles,
  resolveLaunchEnv,
  voterIdOf,
} from "./launch-env.js";

const files: Record<string, string> = {
  "/run/secrets/cluster_secret": "the-cluster-secret\n",
  "/run/secrets/admin_key": "the-admin-key",
};
const readFile = (path: string): string => {
  const content = files[path];
  if (content === undefined) throw new Error(`ENOENT: no such file, open '${path}'`);
  return content;
};

describe("the voter image's entrypoint environment", () => {
  it("reads KeyLoad settings from *_FILE files, without their trailing newline", () => {
    expect(
      readSettingFiles(
        {
          KeyLoad__Cluster__Secret_FILE: "/run/secrets/cluster_secret",
          keyload__bootstrap__adminkey_file: "/run/secrets/admin_key",
          KeyLoad__Cluster__Secret: "overridden by the file",
          OTHER_FILE: "/not/read",
        },
        readFile,
      ),
    ).toEqual({
      KeyLoad__Cluster__Secret: "the-cluster-secret",
      keyload__bootstrap__adminkey: "the-admin-key",
      OTHER_FILE: "/not/read",
    });
    expect(() => readSettingFiles({ KeyLoad__Cluster__Secret_FILE: "/missing" }, readFile)).toThrow(
      LaunchError,
    );
    expect(() => readSettingFiles({ KeyLoad__Cluster__Secret_FILE: "/missing" }, readFile)).toThrow(
      /KeyLoad__Cluster__Secret_FILE: cannot read \/missing .*uid 10001/,
    );
  });

  it("names the voter from its setting, else from its StatefulSet pod's ordinal", () => {
    expect(voterIdOf({ KeyLoad__Node__Id: "voter2" }, "voter-0")).toBe("voter2");
    expect(voterIdOf({}, "voter-0")).toBe("voter1");
    expect(voterIdOf({}, "voter-2")).toBe("voter3");
    expect(() => voterIdOf({}, "3f2a9c1b7e4d")).toThrow(/KeyLoad__Node__Id is not set/);
  });

  it("applies this voter's AppHost__Voters__ settings over the shared ones and drops the others'", () => {
    expect(
      applyVoterOverrides(
        {
          KeyLoad__Raft__ElectionTimeoutMs: "1000",
          keyload__commandadmission__maxcommands: "100",
          AppHost__Voters__voter2__KeyLoad__CommandAdmission__MaxCommands: "7",
          AppHost__Voters__voter3__KeyLoad__CommandAdmission__MaxCommands: "9",
          APPHOST__VOTERS__VOTER2__KEYLOAD__LOG__LEVEL: "debug",
          PATH: "/usr/local/bin",
        },
        "voter2",
      ),
    ).toEqual({
      KeyLoad__Raft__ElectionTimeoutMs: "1000",
      KeyLoad__CommandAdmission__MaxCommands: "7",
      KEYLOAD__LOG__LEVEL: "debug",
      KeyLoad__Node__Id: "voter2",
      PATH: "/usr/local/bin",
    });
  });

  it("resolves files, then the name, then the voter's own settings", () => {
    const env = resolveLaunchEnv(
      {
        KeyLoad__Cluster__Secret_FILE: "/run/secrets/cluster_secret",
        AppHost__Voters__voter1__KeyLoad__Log__Level: "warn",
        KEYLOAD_BOOTSTRAP_RECORD: "dir:/bootstrap",
        UNSET: undefined,
      },
      "voter-0",
      readFile,
    );
    expect(env).toEqual({
      KeyLoad__Cluster__Secret: "the-cluster-secret",
      KeyLoad__Log__Level: "warn",
      KeyLoad__Node__Id: "voter1",
      KEYLOAD_BOOTSTRAP_RECORD: "dir:/bootstrap",
    });
  });
});
