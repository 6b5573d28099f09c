import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AppHostError } from "./apphost-errors.js";
import { parseCli } from "./cli-options.js";

/**
 * Any command line: the AppHost either understands it or refuses it with a typed AppHostError (the
 * CLI's exit status 2 and the usage: an unknown voter is a usage error too), never with another error
 * out of its own parsing.
 */

const word = fc.oneof(
  fc.constantFrom(
    "up",
    "down",
    "status",
    "logs",
    "admission",
    "transfer-leader",
    "partition",
    "heal",
    "publish",
    "help",
    "start",
    "stop",
    "kill",
    "restart",
    "pause",
    "resume",
    "replace",
    "voter1",
    "voter3",
    "leader",
    "voter9",
    "voter1,voter2",
    "voter1,,voter2",
    ",",
  ),
  fc.constantFrom(
    "--state-dir",
    "--env-file",
    "--runtime",
    "--fresh",
    "--isolated",
    "--detach",
    "--json",
    "--follow",
    "--raw",
    "--watch",
    "--tail",
    "--since",
    "--dashboard-port",
    "--target",
    "--out",
    "--build",
    "--image",
    "--http-port",
    "--peer-port",
    "--help",
    "-h",
    "--",
    "--nope",
    "--tail=",
    "--since=-1s",
    "--runtime=container",
    "--dashboard-port=0",
  ),
  fc.constantFrom(
    "",
    "0",
    "-1",
    "5",
    "1e3",
    "30s",
    "5m",
    "2d",
    "1.5h",
    "99999999999999999999",
    "process",
    "compose",
  ),
  fc.string({ maxLength: 10 }),
);

describe("any command line", () => {
  it("is understood or refused with a typed error", () => {
    fc.assert(
      fc.property(fc.array(word, { maxLength: 6 }), (argv) => {
        try {
          parseCli(argv, "/tmp");
        } catch (error) {
          expect(error, JSON.stringify(argv)).toBeInstanceOf(AppHostError);
        }
      }),
      { numRuns: 3_000, seed: 20261206 },
    );
  });
});
