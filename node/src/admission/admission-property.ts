import { AdmissionOptionError } from "./admission-errors.js";

/**
 * One configurable limit: the row a configuration loader iterates to read
 * `KeyLoad:<section>:<name>` (or `KeyLoad__<section>__<name>`) and hand the raw value to `parse`.
 */
export interface AdmissionProperty<N extends string = string> {
  readonly name: N;
  readonly default: number;
  /** What a valid value looks like, for the error message. */
  readonly expected: string;
  /** The value as a number, or undefined when it is invalid. Accepts the text of a variable or argument. */
  readonly parse: (raw: number | string | boolean) => number | undefined;
}

export type PropertyName<T extends readonly AdmissionProperty[]> = T[number]["name"];

/** The resolved limits, keyed by the contract's property names. */
export type AdmissionLimits<N extends string> = { readonly [K in N]: number };

/** The same limits keyed the way the status JSON spells them (`maxCommands`). */
export type AdmissionLimitsView<N extends string> = { readonly [K in N as Uncapitalize<K>]: number };

const DIGITS = /^\s*\d+\s*$/;

function parsePositiveInteger(raw: number | string | boolean): number | undefined {
  if (typeof raw === "boolean" || (typeof raw === "string" && !DIGITS.test(raw))) return undefined;
  const value = Number(raw);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

export function positiveInteger<N extends string>(name: N, defaultValue: number): AdmissionProperty<N> {
  return { name, default: defaultValue, expected: "a positive integer", parse: parsePositiveInteger };
}

/**
 * Fills every property of `table` from `options` or its default, validating what was given.
 * Throws AdmissionOptionError naming the first invalid key.
 */
export function resolveAdmissionLimits<const T extends readonly AdmissionProperty[]>(
  section: string,
  table: T,
  options: Partial<Record<PropertyName<T>, number | string>> = {},
): AdmissionLimits<PropertyName<T>> {
  const given: Partial<Record<string, number | string>> = options;
  const limits: Record<string, number> = {};
  for (const property of table) {
    const raw = given[property.name];
    if (raw === undefined) {
      limits[property.name] = property.default;
      continue;
    }
    const value = property.parse(raw);
    if (value === undefined)
      throw new AdmissionOptionError(`KeyLoad:${section}:${property.name}`, raw, property.expected);
    limits[property.name] = value;
  }
  return Object.freeze(limits) as AdmissionLimits<PropertyName<T>>;
}

export function limitsView<N extends string>(
  table: readonly AdmissionProperty<N>[],
  limits: AdmissionLimits<N>,
): AdmissionLimitsView<N> {
  const view: Record<string, number> = {};
  for (const { name } of table) view[name.charAt(0).toLowerCase() + name.slice(1)] = limits[name];
  return view as AdmissionLimitsView<N>;
}

/** One configured limit with its property name, so a refusal can say which limit refused it. */
export interface NamedLimit<N extends string> {
  readonly property: N;
  readonly value: number;
}

export function namedLimit<N extends string>(limits: AdmissionLimits<N>, property: N): NamedLimit<N> {
  return { property, value: limits[property] };
}
