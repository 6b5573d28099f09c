/**
 * The JSON Schema keywords `conforms` checks: those the contract's answer schemas use (a test holds it
 * to them), with `description` read past as the annotation it is.
 */
export const SCHEMA_KEYWORDS: ReadonlySet<string> = new Set([
  "type",
  "properties",
  "required",
  "items",
  "enum",
  "const",
  "anyOf",
  "allOf",
  "if",
  "then",
  "else",
  "pattern",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "description",
]);

type Schema = Readonly<Record<string, unknown>>;

/**
 * Whether a JSON value is of the shape `schema` (one of the contract's, as plain JSON Schema) describes,
 * as a validator such as Ajv would tell; fields the schema does not name are allowed. The client cannot
 * take on a validator of its own, and the answers' schemas use only a few keywords, so it checks those.
 */
export function conforms(schema: unknown, value: unknown): boolean {
  if (typeof schema === "boolean") return schema;
  if (typeof schema !== "object" || schema === null) return true;
  const s = schema as Schema;
  if (s.type !== undefined && !ofType(s.type, value)) return false;
  if (Array.isArray(s.enum) && !s.enum.some((allowed) => allowed === value)) return false;
  if (Object.hasOwn(s, "const") && s.const !== value) return false;
  if (typeof value === "string" && !stringConforms(s, value)) return false;
  if (typeof value === "number") {
    if (typeof s.minimum === "number" && value < s.minimum) return false;
    if (typeof s.maximum === "number" && value > s.maximum) return false;
  }
  if (Array.isArray(value) && s.items !== undefined && !value.every((item) => conforms(s.items, item))) {
    return false;
  }
  if (isObject(value) && !objectConforms(s, value)) return false;
  if (Array.isArray(s.anyOf) && !s.anyOf.some((branch) => conforms(branch, value))) return false;
  if (Array.isArray(s.allOf) && !s.allOf.every((branch) => conforms(branch, value))) return false;
  if (s.if !== undefined) {
    const then = conforms(s.if, value) ? s.then : s.else;
    if (then !== undefined && !conforms(then, value)) return false;
  }
  return true;
}

function ofType(type: unknown, value: unknown): boolean {
  return Array.isArray(type) ? type.some((one) => isOfType(one, value)) : isOfType(type, value);
}

function isOfType(type: unknown, value: unknown): boolean {
  switch (type) {
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number";
    case "integer":
      return Number.isInteger(value);
    case "boolean":
      return typeof value === "boolean";
    case "null":
      return value === null;
    case "array":
      return Array.isArray(value);
    case "object":
      return isObject(value);
    default:
      return false;
  }
}

function stringConforms(s: Schema, value: string): boolean {
  // JSON Schema counts code points; UTF-16 units bound them from above, half as many from below.
  if (typeof s.minLength === "number" && value.length < s.minLength) return false;
  if (typeof s.maxLength === "number" && value.length > s.maxLength) {
    if (value.length > 2 * s.maxLength || codePoints(value) > s.maxLength) return false;
  }
  if (typeof s.minLength === "number" && value.length < 2 * s.minLength && codePoints(value) < s.minLength) {
    return false;
  }
  return typeof s.pattern !== "string" || patternOf(s.pattern).test(value);
}

function objectConforms(s: Schema, value: Readonly<Record<string, unknown>>): boolean {
  if (Array.isArray(s.required) && !s.required.every((name) => Object.hasOwn(value, String(name)))) {
    return false;
  }
  if (isObject(s.properties)) {
    for (const [name, property] of Object.entries(s.properties)) {
      if (Object.hasOwn(value, name) && !conforms(property, value[name])) return false;
    }
  }
  return true;
}

function isObject(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

const patterns = new Map<string, RegExp>();

/** Compiled once each; with the `u` flag, as Ajv compiles them. */
function patternOf(source: string): RegExp {
  let pattern = patterns.get(source);
  if (pattern === undefined) {
    pattern = new RegExp(source, "u");
    patterns.set(source, pattern);
  }
  return pattern;
}
