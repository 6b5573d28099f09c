/**
 * A JSON Schema as plain data: the same object validates requests (fastify's Ajv), documents them
 * (OpenAPI 3.1) and is compared in tests, so it stays in the subset all three read alike.
 */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** A schema of one JSON type, which `orNull` can widen. */
export type TypedSchema = JsonSchema & { readonly type: string };

export function object(
  properties: Readonly<Record<string, JsonSchema>>,
  required: readonly string[] = [],
  description?: string,
): TypedSchema {
  return {
    type: "object",
    properties,
    ...(required.length > 0 ? { required } : {}),
    ...(description === undefined ? {} : { description }),
  };
}

/** The same schema, or JSON null: how an optional body or field reads when absent (or given as null). */
export function orNull(schema: TypedSchema): JsonSchema {
  return { ...schema, type: [schema.type, "null"] };
}

export function arrayOf(items: JsonSchema, maxItems?: number): TypedSchema {
  return { type: "array", items, ...(maxItems === undefined ? {} : { maxItems }) };
}

export function integer(
  minimum: number,
  maximum = Number.MAX_SAFE_INTEGER,
  description?: string,
): TypedSchema {
  return { type: "integer", minimum, maximum, ...(description === undefined ? {} : { description }) };
}

export function text(minLength: number, maxLength: number, description?: string): TypedSchema {
  return { type: "string", minLength, maxLength, ...(description === undefined ? {} : { description }) };
}

/** Any JSON value at all. */
export function anyJson(description: string): JsonSchema {
  return { description };
}
