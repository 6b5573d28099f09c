import { UsageError } from "./apphost-errors.js";

/** Where voters run: local processes, or containers of a local Docker engine. */
export const RUNTIME_KINDS = ["process", "container"] as const;
export type RuntimeKind = (typeof RUNTIME_KINDS)[number];

export function isRuntimeKind(value: unknown): value is RuntimeKind {
  return RUNTIME_KINDS.some((k) => k === value);
}

export function parseRuntimeKind(value: string): RuntimeKind {
  if (!isRuntimeKind(value))
    throw new UsageError(
      `--runtime must be one of ${RUNTIME_KINDS.join(", ")}, not ${JSON.stringify(value)}`,
    );
  return value;
}
