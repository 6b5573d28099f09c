import {
  Kind,
  type SchemaOptions,
  type Static,
  type TInteger,
  type TObject,
  type TSchema,
  type TString,
  type TUnknown,
  type TUnsafe,
  Type,
} from "@sinclair/typebox";

/**
 * The building blocks of the wire schemas. Each schema is a TypeBox schema, so its TypeScript type is
 * derived from it (`Wire`), and at the same time plain JSON Schema: the voter's edge validates requests
 * with it (fastify's Ajv) and documents it (OpenAPI 3.1). TypeBox's own builders are used where their
 * JSON is the JSON Schema the edge has always checked against; the helpers below cover the few shapes
 * where it is not (a `type` array, `enum`, a bare `const`), since a different but equivalent schema
 * would still change the messages of the 400s the edge answers.
 */

/** Any wire schema: what the voter's route table holds. */
export type WireSchema = TSchema;

/** The type a wire schema describes, read-only all the way down: both sides read wire values, never mutate them. */
export type Wire<S extends TSchema> = DeepReadonly<Static<S>>;

export type DeepReadonly<T> = T extends readonly (infer E)[]
  ? readonly DeepReadonly<E>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** Flattens an intersection into one object type, as its schema's type reads. */
export type Flat<T> = T extends unknown ? { [K in keyof T]: T[K] } : never;

/**
 * `S` with its field `F` of type `T`: a document's value or a message's body is any JSON, and the `T` of
 * a read is the caller's claim about it, not something either side checks.
 */
export type Refined<S, F extends string, T> = S extends unknown
  ? F extends keyof S
    ? Flat<Omit<S, F> & { readonly [K in F]: T }>
    : S
  : never;

/** Undoes `DeepReadonly`: what `Static` gives, for comparing a wire type with its schema's. */
export type DeepMutable<T> = T extends readonly (infer E)[]
  ? DeepMutable<E>[]
  : T extends object
    ? { -readonly [K in keyof T]: DeepMutable<T[K]> }
    : T;

/** `description` only when there is one, as the schemas always wrote it. */
function described(description: string | undefined): SchemaOptions | undefined {
  return description === undefined ? undefined : { description };
}

/** A schema of one JSON type, which `orNull` can widen. */
type Typed = TSchema & { readonly type: string };

/** The same schema, or JSON null (`type: [T, "null"]`): how an optional body or field reads when absent or null. */
export function orNull<T extends Typed>(schema: T, options?: SchemaOptions): TUnsafe<Static<T> | null> {
  return Type.Unsafe<Static<T> | null>({
    ...schema,
    ...options,
    // Unsafe keeps a Kind it is given; this is no longer the schema of `schema`'s kind.
    [Kind]: "Unsafe",
    type: [schema.type, "null"],
  });
}

/** The schema, or JSON null, as `anyOf` (how answers say "null when none"). */
export function nullable<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}

/** One of `values` (`enum`): TypeBox's unions of literals would be `anyOf`s of `const`s. */
export function enumOf<const V extends readonly (string | null)[]>(
  values: V,
  description?: string,
): TUnsafe<V[number]> {
  return Type.Unsafe<V[number]>({ enum: [...values], ...described(description) });
}

/** Exactly `value` (a bare `const`): TypeBox's literal adds a `type`, which reports a different error first. */
export function constant<const V extends string | number | boolean>(value: V): TUnsafe<V> {
  return Type.Unsafe<V>({ const: value });
}

type JsonTypes = { string: string; number: number; integer: number; boolean: boolean; null: null };

/** A value of any of the JSON types `names` (`type` as an array). */
export function ofTypes<const N extends readonly (keyof JsonTypes)[]>(
  names: N,
): TUnsafe<JsonTypes[N[number]]> {
  return Type.Unsafe<JsonTypes[N[number]]>({ type: [...names] });
}

/** Any JSON value at all. */
export function anyJson(description: string): TUnknown {
  return Type.Unknown({ description });
}

/** Any JSON object, its fields not described. */
export function anyObject(description?: string): TUnsafe<Record<string, unknown>> {
  return Type.Unsafe<Record<string, unknown>>({ type: "object", ...described(description) });
}

export function text(minLength: number, maxLength: number, description?: string): TString {
  return Type.String({ minLength, maxLength, ...described(description) });
}

export function integer(minimum: number, maximum = Number.MAX_SAFE_INTEGER, description?: string): TInteger {
  return Type.Integer({ minimum, maximum, ...described(description) });
}

/**
 * An object of one of several shapes: `type: "object"` once, the shapes as `anyOf` branches without a
 * `type` of their own (which would only repeat the same error once per branch).
 */
export function objectOfShapes<const T extends readonly TObject[]>(
  shapes: T,
  description: string,
): TUnsafe<Static<T[number]>> {
  return Type.Unsafe<Static<T[number]>>({
    type: "object",
    anyOf: shapes.map(({ type: _type, ...shape }) => shape),
    description,
  });
}

/** Fields a case of the discriminant requires: one name, or several. */
type CaseFields<S> = (keyof S & string) | readonly (keyof S & string)[];
type FieldsOf<C> = C extends readonly (infer F)[] ? F : C;

/**
 * `S` split by its discriminant `D`: per value, the fields its case requires become required (and not
 * undefined), the rest stay as they are.
 */
export type Discriminated<S, D extends keyof S, C> = S extends unknown
  ? {
      [V in S[D] & string]: Flat<
        Omit<S, D | (V extends keyof C ? FieldsOf<C[V]> & keyof S : never)> & {
          [K in D]: V;
        } & (V extends keyof C ? { [K in FieldsOf<C[V]> & keyof S]-?: Exclude<S[K], undefined> } : unknown)
      >;
    }[S[D] & string]
  : never;

/**
 * `base`, with the fields each value of its discriminant requires (JSON Schema's if/then, which names
 * the missing field): `{op: "put"}` needs a value, for instance.
 */
export function requiredWhen<
  T extends TObject,
  D extends keyof Static<T> & string,
  const C extends Readonly<Record<string, CaseFields<Static<T>>>>,
>(base: T, discriminant: D, cases: C): TUnsafe<Discriminated<Static<T>, D, C>> {
  const allOf = Object.entries(cases).map(([value, fields]) => ({
    if: { properties: { [discriminant]: { const: value } } },
    // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword, not a thenable.
    then: { required: typeof fields === "string" ? [fields] : [...fields] },
  }));
  return Type.Unsafe<Discriminated<Static<T>, D, C>>({ ...base, [Kind]: "Unsafe", allOf });
}
