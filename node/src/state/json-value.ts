import { invalid } from "./json-body.js";

/**
 * How deep a stored JSON value may nest. JSON.stringify and SQLite's JSON functions recurse, so an
 * unbounded depth would let one payload overflow the stack on every voter at once.
 */
const MAX_JSON_DEPTH = 64;

/** What a check counted in a value: how it is best written back as JSON (see storedJson). */
export interface JsonValueShape {
  /** The values in the tree: the root and every value nested in it, at any depth. */
  readonly values: number;
  /** The characters of its strings, field names left out. */
  readonly stringChars: number;
}

/**
 * Checks a document value (see checkJsonValue) and collects its string leaves (not field names) for
 * full-text search.
 */
export function documentText(value: unknown): string {
  return indexedJsonValue(value).text;
}

/** documentText, and the value's shape as checkJsonValue counts it. */
export function indexedJsonValue(value: unknown): { readonly text: string; readonly shape: JsonValueShape } {
  const parts: string[] = [];
  const shape = walk(value, (text) => parts.push(text));
  return { text: parts.join("\n"), shape };
}

/**
 * Checks a JSON value that is not indexed (message bodies, directive data) as a document's: its depth,
 * and that every number is finite. JSON.parse reads a number beyond a double's range (1e400) as
 * Infinity, which JSON.stringify writes as null: accepted, it would be stored as something else.
 */
export function checkJsonValue(value: unknown): JsonValueShape {
  return walk(value, null);
}

/** Iterative, so the walk itself cannot overflow the stack it protects. */
function walk(value: unknown, onString: ((text: string) => void) | null): JsonValueShape {
  let values = 0;
  let stringChars = 0;
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    values++;
    const current = item.value;
    if (typeof current === "string") {
      stringChars += current.length;
      onString?.(current);
    } else if (typeof current === "number") {
      if (!Number.isFinite(current))
        throw invalid("a JSON number is beyond the range of a 64-bit float and would be stored as null");
    } else if (typeof current === "object" && current !== null) {
      if (item.depth >= MAX_JSON_DEPTH)
        throw invalid(`JSON values may nest at most ${MAX_JSON_DEPTH} levels`);
      const children = Array.isArray(current) ? current : Object.values(current);
      // Pushed in reverse so the text keeps document order.
      for (let i = children.length - 1; i >= 0; i--)
        stack.push({ value: children[i], depth: item.depth + 1 });
    }
  }
  return { values, stringChars };
}
