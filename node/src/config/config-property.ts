/** A raw configuration value as a source gives it: text from env/args, or a JSON value from a file. */
export type RawValue = string | number | boolean;

/**
 * One configurable property: its name within a section, default (absent when required), what a
 * valid value looks like, and how raw text or JSON becomes the value (undefined when invalid). The
 * admission limit tables have this shape, so every section is declared the same way.
 */
export interface ConfigProperty<N extends string = string, T = unknown> {
  readonly name: N;
  readonly default?: T;
  readonly expected: string;
  readonly parse: (raw: RawValue) => T | undefined;
  /** Never echo the value in an error message. */
  readonly secret?: boolean;
  /**
   * Set on a property that no longer does anything: why, and what to do instead. It is still read and
   * validated, so a configuration that sets it keeps starting (with a warning) and a typo in its value
   * is still refused; the loaded configuration leaves it out.
   */
  readonly deprecated?: string;
}

const INTEGER = /^\s*-?\d+\s*$/;

function integerIn(min: number, max: number): (raw: RawValue) => number | undefined {
  return (raw) => {
    if (typeof raw === "boolean" || (typeof raw === "string" && !INTEGER.test(raw))) return undefined;
    const value = Number(raw);
    return Number.isSafeInteger(value) && value >= min && value <= max ? value : undefined;
  };
}

export function integer<N extends string>(
  name: N,
  defaultValue: number | undefined,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): ConfigProperty<N, number> {
  return {
    name,
    ...(defaultValue === undefined ? {} : { default: defaultValue }),
    expected: max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`,
    parse: integerIn(min, max),
  };
}

export function text<N extends string>(
  name: N,
  defaultValue: string | undefined,
  pattern: RegExp,
  expected: string,
  secret = false,
): ConfigProperty<N, string> {
  return {
    name,
    ...(defaultValue === undefined ? {} : { default: defaultValue }),
    expected,
    secret,
    parse: (raw) => (typeof raw === "string" && pattern.test(raw) ? raw : undefined),
  };
}

export function oneOf<N extends string, const V extends string>(
  name: N,
  defaultValue: V,
  values: readonly V[],
): ConfigProperty<N, V> {
  return {
    name,
    default: defaultValue,
    expected: `one of ${values.join(", ")}`,
    parse: (raw) => {
      const value = String(raw).toLowerCase();
      return values.find((v) => v.toLowerCase() === value);
    },
  };
}

/** `property`, kept only so that configurations setting it still start: see ConfigProperty.deprecated. */
export function deprecated<N extends string, T>(
  property: ConfigProperty<N, T>,
  why: string,
): ConfigProperty<N, T> {
  return { ...property, deprecated: why };
}
