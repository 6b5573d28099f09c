import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkJsonValue } from "./json-value.js";
import { storedJson } from "./stored-json.js";

/** Text a client might send: any JSON value, compact or indented. */
const payloads = fc
  .tuple(fc.jsonValue({ maxDepth: 4 }), fc.constantFrom(undefined, 1, 2, "\t"))
  .map(([value, space]) => JSON.stringify(value, null, space));

/** Strings with nothing to escape, long ones among them, and field names JSON.parse reorders. */
const plainString = fc.string({
  unit: fc.constantFrom("a", "z", "é", "😀", "/", " ", "'", "\u2028"),
  maxLength: 300,
});
const plainValues = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    plainString,
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 5 }),
    fc.dictionary(fc.oneof(plainString, fc.nat().map(String)), tie("value"), { maxKeys: 5 }),
  ),
}));

describe("storedJson", () => {
  it("writes what JSON.stringify writes for any parsed payload", () => {
    fc.assert(
      fc.property(payloads, (text) => {
        const value: unknown = JSON.parse(text);
        const written = storedJson(value, checkJsonValue(value), !text.includes("\\"));
        expect(written).toBe(JSON.stringify(value));
      }),
    );
  });

  it("writes what JSON.stringify writes when it writes the strings as they are", () => {
    fc.assert(
      fc.property(plainValues.value, (original) => {
        const text = JSON.stringify(original);
        fc.pre(!text.includes("\\"));
        const value: unknown = JSON.parse(text);
        // A shape of long strings, so that the plain writer runs whatever the value holds.
        expect(storedJson(value, { values: 1, stringChars: 64 }, true)).toBe(JSON.stringify(value));
      }),
    );
  });

  it("writes numbers as JSON.stringify spells them, whatever the payload's spelling", () => {
    const text =
      '{ "b" : [-0, 1.0, 1e2, 1E+2, 12.50, 0.1e-5, 5e-324, 1e21, 123456789012345680000], "2": "x", "1": true }';
    const value: unknown = JSON.parse(text);
    expect(storedJson(value, { values: 1, stringChars: 64 }, true)).toBe(JSON.stringify(value));
  });

  it("writes field names JavaScript gives a meaning as JSON.stringify does", () => {
    const text = '{"__proto__":{"a":"x"},"constructor":"y","toJSON":"z","hasOwnProperty":[]}';
    const value: unknown = JSON.parse(text);
    expect(storedJson(value, { values: 1, stringChars: 64 }, true)).toBe(text);
  });

  it("leaves escaping to JSON.stringify when the payload held a backslash", () => {
    const value: unknown = JSON.parse('{"a":"say \\"hi\\"\\n","b":"x"}');
    expect(storedJson(value, { values: 1, stringChars: 1000 }, false)).toBe(
      '{"a":"say \\"hi\\"\\n","b":"x"}',
    );
  });
});
