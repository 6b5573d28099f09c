import { ContainerRuntimeUnavailableError, UsageError } from "./apphost-errors.js";

/** Where voters run: local processes, or containers (which need a Docker engine this AppHost does not drive yet). */
export const RUNTIME_KINDS = ["process", "container"] as const;
export type RuntimeKind = (typeof RUNTIME_KINDS)[number];

export function parseRuntimeKind(value: string): RuntimeKind {
  const kind = RUNTIME_KINDS.find((k) => k === value);
  if (!kind)
    throw new UsageError(
      `--runtime must be one of ${RUNTIME_KINDS.join(", ")}, not ${JSON.stringify(value)}`,
    );
  return kind;
}

export function assertRuntimeAvailable(kind: RuntimeKind): asserts kind is "process" {
  if (kind === "container") throw new ContainerRuntimeUnavailableError();
}
