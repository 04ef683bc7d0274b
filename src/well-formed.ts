// Well-formed text, the one rule every transport applies to the strings it accepts. A JavaScript string
// is UTF-16 and can hold a lone surrogate (JSON's `"\ud800"` escape, a MessagePack str made of CESU-8
// bytes); such a string has no UTF-8 form, so SQLite, MQTT topics and logs would store or show it
// changed (as U+FFFD), and a device id that changes on the way in no longer names its device.

// With the `u` flag a surrogate pair is one code point, so only unpaired halves match.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** False when `text` holds a lone UTF-16 surrogate (String.prototype.isWellFormed, which ES2022 lacks). */
export function isWellFormed(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

/** What is said about a string that is not well-formed, wherever it was sent. */
export const ILL_FORMED_TEXT = 'must be well-formed Unicode text (it holds a lone UTF-16 surrogate)';

interface Node {
  readonly value: unknown;
  readonly parent: Node | undefined;
  readonly key: string | number;
}

function pathOf(node: Node | undefined, last?: string): Array<string | number> {
  const reversed: Array<string | number> = last === undefined ? [] : [last];
  for (let n = node; n?.parent; n = n.parent) reversed.push(n.key);
  return reversed.reverse();
}

/**
 * Paths (property names and array indexes from the root) of the first `max` strings in a decoded JSON
 * or MessagePack value that are not well-formed: string values and property names alike (the path of an
 * ill-formed name ends with that name). Byte arrays are data, not text, and are skipped. Iterative, and
 * a path is built only for what is found: each costs its depth, so the caller bounds both (a value
 * 20,000 levels deep holding 5,000 such strings asked for every path took 2.3 GB).
 */
export function illFormedTextPaths(value: unknown, max: number): Array<Array<string | number>> {
  const found: Array<Array<string | number>> = [];
  const stack: Node[] = [{ value, parent: undefined, key: '' }];
  while (stack.length > 0 && found.length < max) {
    const node = stack.pop()!;
    const v = node.value;
    if (typeof v === 'string') {
      if (!isWellFormed(v)) found.push(pathOf(node));
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], parent: node, key: i });
    } else if (v !== null && typeof v === 'object' && !ArrayBuffer.isView(v)) {
      const entries = Object.entries(v as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        if (!isWellFormed(key)) {
          if (found.length < max) found.push(pathOf(node, key));
        } else stack.push({ value: child, parent: node, key });
      }
    }
  }
  return found;
}
