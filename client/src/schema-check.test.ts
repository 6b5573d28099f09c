import { HealthSchema, RESPONSE_SCHEMAS, WrittenSchema } from "@keyload/contract";
import { describe, expect, it } from "vitest";
import { conforms, SCHEMA_KEYWORDS } from "./schema-check.js";

/** Every keyword the answers' schemas use, as their plain JSON Schema reads. */
function keywords(schema: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const item of schema) keywords(item, found);
  else if (typeof schema === "object" && schema !== null) {
    for (const [name, value] of Object.entries(schema)) {
      found.add(name);
      if (name === "properties")
        for (const property of Object.values(value as object)) keywords(property, found);
      else if (name !== "enum" && name !== "const" && name !== "required") keywords(value, found);
    }
  }
  return found;
}

describe("conforms", () => {
  it("knows every keyword of the answers' schemas", () => {
    for (const schema of [...Object.values(RESPONSE_SCHEMAS), HealthSchema, WrittenSchema]) {
      for (const name of keywords(schema)) expect(SCHEMA_KEYWORDS.has(name), name).toBe(true);
    }
  });

  it("checks types, required fields, bounds, patterns, enums and consts", () => {
    const doc = RESPONSE_SCHEMAS["catalog.get"];
    expect(conforms(doc, { key: "k", value: [1], version: 1 })).toBe(true);
    expect(conforms(doc, { key: "k", version: 1 })).toBe(false);
    expect(conforms(doc, { key: "", value: 1, version: 1 })).toBe(false);
    expect(conforms(doc, { key: "k", value: 1, version: 0 })).toBe(false);
    expect(conforms(doc, { key: "k", value: 1, version: 1.5 })).toBe(false);
    expect(conforms(doc, [])).toBe(false);
    expect(conforms(doc, null)).toBe(false);
    // Lengths count code points, as JSON Schema does.
    expect(conforms(doc, { key: "😀".repeat(512), value: 1, version: 1 })).toBe(true);
    const put = RESPONSE_SCHEMAS["catalog.put"];
    expect(conforms(put, { commandId: "a b", key: "k", version: 1 })).toBe(false);
    const page = RESPONSE_SCHEMAS["catalog.bulkGet"];
    expect(conforms(page, { items: [{ key: "k", found: false }], remaining: ["j"] })).toBe(true);
    expect(conforms(page, { items: [{ key: "k", found: true }] })).toBe(false);
    expect(conforms(page, { items: {} })).toBe(false);
  });

  it("takes a write set's results as the voter answers them: a check that a key is absent at version 0", () => {
    const result = { op: "check", key: "tx/b", version: 0 };
    const answer = { commandId: "c", results: [{ op: "put", key: "tx/a", version: 1 }, result], outbox: [] };
    expect(conforms(RESPONSE_SCHEMAS.transaction, answer)).toBe(true);
    expect(conforms(RESPONSE_SCHEMAS.transaction, { ...answer, results: [{ ...result, version: -1 }] })).toBe(
      false,
    );
  });

  it("checks each case of a discriminated shape (if/then) and nullable fields (anyOf)", () => {
    const outcome = RESPONSE_SCHEMAS["command.get"];
    expect(conforms(outcome, { commandId: "c", status: "committed", index: 1, result: null })).toBe(true);
    expect(conforms(outcome, { commandId: "c", status: "committed", index: 1 })).toBe(false);
    expect(conforms(outcome, { commandId: "c", status: "gone", index: 1 })).toBe(false);
    expect(
      conforms(outcome, { commandId: "c", status: "expired", index: 1, failed: false, errorCode: null }),
    ).toBe(true);
    expect(
      conforms(outcome, { commandId: "c", status: "expired", index: 1, failed: false, errorCode: "Nope" }),
    ).toBe(false);
  });
});
