import { InvalidArgumentError } from "@keyload/contract";

export type JsonObject = Record<string, unknown>;

/**
 * Parses a request body into a JSON object. Unknown fields are ignored rather than refused: the contract
 * says tenant, principal or role claims inside a body are ignored, so a body may carry them.
 * `emptyAllowed` accepts an absent body (an empty payload, or JSON `null`) as `{}` on routes whose body
 * is optional.
 */
export function parseBody(payload: string, emptyAllowed: boolean): JsonObject {
  if (payload.length === 0 && emptyAllowed) return {};
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    throw invalid("the body is not valid JSON", "MalformedJson");
  }
  if (value === null && emptyAllowed) return {};
  if (!isJsonObject(value)) throw invalid("the body must be a JSON object", "MalformedJson");
  return value;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function requireString(body: JsonObject, field: string): string {
  const value = body[field];
  if (typeof value !== "string") throw invalid(`${field} must be a string`);
  return value;
}

export function optionalString(body: JsonObject, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw invalid(`${field} must be a string`);
  return value;
}

/** An integer in [min, max], or undefined when absent (null counts as absent). */
export function optionalInteger(
  body: JsonObject,
  field: string,
  min: number,
  max: number,
): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    throw invalid(`${field} must be an integer in [${min}, ${max}]`);
  }
  return value;
}

export function requireInteger(body: JsonObject, field: string, min: number, max: number): number {
  const value = optionalInteger(body, field, min, max);
  if (value === undefined) throw invalid(`${field} is required`);
  return value;
}

export function optionalArray(body: JsonObject, field: string): readonly unknown[] | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw invalid(`${field} must be an array`);
  return value;
}

export function invalid(message: string, reason = "InvalidBody"): InvalidArgumentError {
  return new InvalidArgumentError(message, { reason });
}
