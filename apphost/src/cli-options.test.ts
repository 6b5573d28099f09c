import { describe, expect, it } from "vitest";
import { UnknownVoterError, UsageError } from "./apphost-errors.js";
import { parseCli } from "./cli-options.js";

describe("the AppHost command line's new commands and options", () => {
  it("reads partition groups, each a comma-separated list", () => {
    expect(parseCli(["partition", "voter1,voter2", "voter3"]).groups).toEqual([
      ["voter1", "voter2"],
      ["voter3"],
    ]);
    expect(parseCli(["partition", "leader", "voter2"]).groups).toEqual([["leader"], ["voter2"]]);
    expect(() => parseCli(["partition"])).toThrow(UsageError);
    expect(() => parseCli(["partition", "voter1,voter2", "voter2"])).toThrow(/more than one group/);
    // One group of every voter cuts nothing; one voter alone is cut off from the two others.
    expect(() => parseCli(["partition", "voter1,voter2,voter3"])).toThrow(/cuts no voter off/);
    expect(parseCli(["partition", "voter1"]).groups).toEqual([["voter1"]]);
    expect(parseCli(["partition", "leader,voter1,voter2"]).groups).toEqual([["leader", "voter1", "voter2"]]);
    expect(() => parseCli(["heal", "voter1"])).toThrow(UsageError);
  });

  it("refuses an empty state dir or env file, and an env file that is not there", () => {
    expect(() => parseCli(["status", "--state-dir", ""])).toThrow(/--state-dir needs a path/);
    expect(() => parseCli(["up", "--env-file", ""])).toThrow(/--env-file needs a path/);
    expect(() => parseCli(["up", "--env-file", "/nonexistent/keyload.env"])).toThrow(/does not exist/);
    expect(parseCli(["up", "--env-file", "package.json"], process.cwd()).envFile).toMatch(/package\.json$/);
  });

  it("accepts leader wherever a voter is named", () => {
    expect(parseCli(["restart", "leader"]).voter).toBe("leader");
    expect(parseCli(["transfer-leader", "voter2"]).voter).toBe("voter2");
    expect(parseCli(["admission", "leader", "--json"])).toMatchObject({ voter: "leader", json: true });
    expect(parseCli(["admission"]).voter).toBeUndefined();
    expect(() => parseCli(["transfer-leader"])).toThrow(/exactly one voter/);
    expect(() => parseCli(["stop", "voter9"])).toThrow(UnknownVoterError);
  });

  it("reads --tail as a count and --since as a duration", () => {
    expect(parseCli(["logs", "leader", "--tail", "5", "--since", "5m"])).toMatchObject({
      voter: "leader",
      tail: 5,
      sinceMs: 300_000,
    });
    expect(parseCli(["logs", "--since", "30s"]).sinceMs).toBe(30_000);
    expect(parseCli(["logs", "--since", "1h"]).sinceMs).toBe(3_600_000);
    expect(parseCli(["logs"]).tail).toBeUndefined();
    expect(() => parseCli(["logs", "--since", "soon"])).toThrow(/--since takes a duration/);
    expect(() => parseCli(["logs", "--tail", "-3"])).toThrow(UsageError);
    expect(() => parseCli(["status", "--tail", "3"])).toThrow(/status does not take --tail/);
  });

  it("redraws status only as a table", () => {
    expect(parseCli(["status", "--watch"]).watch).toBe(true);
    expect(() => parseCli(["status", "--watch", "--json"])).toThrow(UsageError);
    expect(() => parseCli(["logs", "--watch"])).toThrow(/logs does not take --watch/);
  });
});
