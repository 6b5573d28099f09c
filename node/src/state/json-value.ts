import { invalid } from "./json-body.js";

/**
 * How deep a stored JSON value may nest. JSON.stringify and SQLite's JSON functions recurse, so an
 * unbounded depth would let one payload overflow the stack on every voter at once.
 */
const MAX_JSON_DEPTH = 64;

/** Checks a document value's depth and collects its string leaves (not field names) for full-text search. */
export function documentText(value: unknown): string {
  const parts: string[] = [];
  walk(value, (text) => parts.push(text));
  return parts.join("\n");
}

/** Checks a JSON value that is not indexed (message bodies, directive data) for the same depth bound. */
export function checkJsonDepth(value: unknown): void {
  walk(value, null);
}

/** Iterative, so the walk itself cannot overflow the stack it protects. */
function walk(value: unknown, onString: ((text: string) => void) | null): void {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const current = item.value;
    if (typeof current === "string") {
      onString?.(current);
    } else if (typeof current === "object" && current !== null) {
      if (item.depth >= MAX_JSON_DEPTH)
        throw invalid(`JSON values may nest at most ${MAX_JSON_DEPTH} levels`);
      const children = Array.isArray(current) ? current : Object.values(current);
      // Pushed in reverse so the text keeps document order.
      for (let i = children.length - 1; i >= 0; i--)
        stack.push({ value: children[i], depth: item.depth + 1 });
    }
  }
}
