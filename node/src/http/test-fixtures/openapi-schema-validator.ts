import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

/**
 * The official OpenAPI 3.1 JSON Schema, 2022-10-07 (https://spec.openapis.org/oas/3.1/schema/2022-10-07,
 * from github.com/OAI/OpenAPI-Specification, Apache-2.0), vendored in openapi-3.1-schema.json (its
 * content unchanged, its whitespace biome's) as tests run without a network. This copy came from the
 * openapi-spec-validator 0.9.0 Python package (resources/schemas/v3.1/schema.json). As the OAI
 * publishes it, it checks the document's structure and leaves the JSON Schemas in it
 * (`$dynamicRef: "#meta"`) to their own dialect.
 */
const SCHEMA: unknown = JSON.parse(
  readFileSync(new URL("./openapi-3.1-schema.json", import.meta.url), "utf8"),
);

/**
 * The schema points at Schema Objects with `$dynamicRef: "#meta"`, whose only `$dynamicAnchor: "meta"`
 * in this document is `$defs/schema`: used alone (not extended by a dialect's schema), that is a plain
 * `$ref` to it. Ajv binds a `$dynamicAnchor` only once evaluation has passed through it, which never
 * happens here before the reference is followed, and then checks Schema Objects against the object that
 * holds them (every parameter's schema failing as a parameter); so the reference is rewritten, in memory.
 */
function withStaticMetaRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withStaticMetaRefs);
  if (typeof node !== "object" || node === null) return node;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "$dynamicRef" && value === "#meta") copy.$ref = "#/$defs/schema";
    else copy[key] = withStaticMetaRefs(value);
  }
  return copy;
}

interface SchemaError {
  readonly instancePath: string;
  readonly message?: string;
  readonly params: Readonly<Record<string, unknown>>;
}

interface CompiledSchema {
  (data: unknown): boolean;
  errors?: readonly SchemaError[] | null;
}

interface Ajv2020Like {
  compile(schema: object): CompiledSchema;
}

type Ajv2020Class = new (options: Readonly<Record<string, unknown>>) => Ajv2020Like;

/**
 * Ajv's draft 2020-12 validator, reached through fastify, whose schema compiler depends on it:
 * @keyload/node does not list ajv itself, and pnpm only lets a package import what it lists.
 */
function loadAjv2020(): Ajv2020Class {
  const fromHere = createRequire(import.meta.url);
  const fromFastify = createRequire(fromHere.resolve("fastify"));
  const fromCompiler = createRequire(fromFastify.resolve("@fastify/ajv-compiler"));
  return (fromCompiler("ajv/dist/2020") as { Ajv2020: Ajv2020Class }).Ajv2020;
}

// strict off: the OAI's schema is written for any 2020-12 validator, not Ajv's strict mode (it leaves
// `type` implied beside `properties`). Formats are annotations in 2020-12, so they are not asserted.
const validate = new (loadAjv2020())({ strict: false, validateFormats: false, allErrors: true }).compile(
  withStaticMetaRefs(SCHEMA) as object,
);

/** Where and why `document` breaks the OpenAPI 3.1 schema; empty when it conforms. */
export function openApiSchemaProblems(document: unknown): string[] {
  if (validate(document)) return [];
  return (validate.errors ?? []).map(
    (error) => `${error.instancePath || "/"}: ${error.message ?? "invalid"} ${JSON.stringify(error.params)}`,
  );
}
