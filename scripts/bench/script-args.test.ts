import { parseArgs } from "node:util";
import { describe, expect, it } from "vitest";
import { scriptArgs } from "./script-args.js";

describe("scriptArgs", () => {
  it("drops the `--` pnpm passes along, so parseArgs reads the options after it", () => {
    const options = { gib: { type: "string" } } as const;
    expect(parseArgs({ args: scriptArgs(["--", "--gib", "1"]), options }).values).toEqual({ gib: "1" });
    expect(parseArgs({ args: scriptArgs(["--gib", "1"]), options }).values).toEqual({ gib: "1" });
    // A `--` later on is parseArgs's own end of options.
    expect(scriptArgs(["--gib", "1", "--"])).toEqual(["--gib", "1", "--"]);
  });
});
