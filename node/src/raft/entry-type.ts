import type { EntryType } from "./types.js";

/**
 * How an entry type is written on disk and on the wire: a small integer, so a renamed type never
 * changes the bytes. Codes are never reused.
 */
const TYPE_CODES: Readonly<Record<EntryType, number>> = { normal: 0, noop: 1, conf: 2 };
const TYPES_BY_CODE: readonly EntryType[] = ["normal", "noop", "conf"];

export function entryTypeCode(type: EntryType): number {
  return TYPE_CODES[type];
}

/** The entry type written as `code`, or null when the code is unknown (damaged or foreign bytes). */
export function entryTypeOf(code: number): EntryType | null {
  return TYPES_BY_CODE[code] ?? null;
}

export function isEntryType(type: unknown): type is EntryType {
  return typeof type === "string" && Object.hasOwn(TYPE_CODES, type);
}
