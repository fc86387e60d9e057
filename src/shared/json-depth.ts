/**
 * Nesting limits for JSON coming from outside: request bodies of the hub and the daemon, the
 * hub's tunnel frames from daemons, and catalog documents. A deeper document is refused before
 * anything recursive (validation, JSON.stringify) could overflow the stack on it.
 */

/** The deepest nesting of arrays and objects accepted (the document itself is level 1). */
export const MAX_JSON_DEPTH = 128;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether JSON text nests arrays and objects deeper than `max`. One pass over the characters, no
 * recursion and no parsing (brackets inside strings do not count), so it runs before JSON.parse.
 * Malformed text is left to JSON.parse.
 */
export function jsonTextTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}

/** Whether a parsed value (e.g. from YAML) nests arrays and objects deeper than `max`; iterative. */
export function valueTooDeep(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object' || seen.has(v)) continue;
    if (depth > max) return true;
    seen.add(v);
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

export const tooDeepMessage = (what: string) => `${what} is nested deeper than ${MAX_JSON_DEPTH} levels`;
