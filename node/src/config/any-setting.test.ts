import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError } from "./config-error.js";
import { REQUIRED_ENV } from "./test-fixtures/required-env.js";
import { loadVoterConfig, VOTER_CONFIG } from "./voter-config.js";

/**
 * Any value for any setting, from the environment, an argument or the JSON file: the voter either
 * starts with it or stops with a ConfigError (contract section 5: "an invalid value stops the node at
 * start with a message naming the key"), never with another error out of its own parsing.
 */

const SETTINGS = Object.entries(VOTER_CONFIG).flatMap(([section, table]) =>
  table.map((property) => ({ section, name: property.name })),
);

const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(
    "",
    " ",
    "0",
    "-1",
    "1.5",
    "1e3",
    "0x10",
    " 42 ",
    "9007199254740993",
    "99999999999999999999",
    "-0",
    "NaN",
    "Infinity",
    "true",
    "null",
    "[]",
    "{}",
    "http://127.0.0.1:7101",
    "voter1@127.0.0.1:7201",
    "x".repeat(300),
    "\u0000",
    "é",
  ),
);

const fileValue = fc.oneof(
  text,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constantFrom<unknown>(null, [], {}, [1], { a: 1 }),
);

const dir = mkdtempSync(join(tmpdir(), "keyload-any-setting-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Loads, and answers the ConfigError (or undefined when the voter would start); anything else throws. */
function outcome(load: () => unknown): ConfigError | undefined {
  try {
    load();
    return undefined;
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
}

describe("any setting's value", () => {
  it("starts the voter or stops it with a ConfigError, from the environment and from arguments", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...SETTINGS),
        text,
        fc.boolean(),
        ({ section, name }, value, asArgument) => {
          const key = `KeyLoad:${section}:${name}`;
          const error = outcome(() =>
            asArgument
              ? loadVoterConfig({ env: REQUIRED_ENV, args: [`--${key}=${value}`] })
              : loadVoterConfig({ env: { ...REQUIRED_ENV, [`KeyLoad__${section}__${name}`]: value } }),
          );
          // A value refused alone names its own key; one refused against another setting may name that.
          if (error !== undefined) expect(error.key.toLowerCase()).toMatch(/^keyload:[a-z]+:[a-z0-9]+$/);
        },
      ),
      { numRuns: 2_000, seed: 20261206 },
    );
  });

  it("starts the voter or stops it with a ConfigError, from the JSON file", () => {
    let n = 0;
    fc.assert(
      fc.property(fc.constantFrom(...SETTINGS), fileValue, ({ section, name }, value) => {
        const file = join(dir, `config-${n++}.json`);
        writeFileSync(file, JSON.stringify({ KeyLoad: { [section]: { [name]: value } } }));
        outcome(() => loadVoterConfig({ env: REQUIRED_ENV, args: ["--config", file] }));
      }),
      { numRuns: 500, seed: 20261206 },
    );
  });
});
