// ASP.NET Core reads a JSON hub message, and the handshake request, with a Utf8JsonReader that stops at
// the end of the first object: whatever follows it in the record (a NUL a C client counted in, a second
// object) is never read. JSON.parse takes the whole text, so when it refuses a record, the object the
// record starts with is looked for and read on its own.

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/**
 * The offset just after the object `text` starts with (after JSON white space), found by its brackets
 * outside strings; undefined when it starts with no object or the object does not end. Whether the
 * object is well-formed is JSON.parse's to say.
 */
export function endOfLeadingObject(text: string): number | undefined {
  let i = 0;
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) !== 0x7b) return undefined;
  let depth = 0;
  let inString = false;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return undefined;
}

/** JSON.parse of the record, or of the object it starts with when what follows that object is what JSON.parse refused. */
export function parseLeadingObject(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    const end = endOfLeadingObject(text);
    if (end === undefined || end === text.length) throw e;
    try {
      return JSON.parse(text.slice(0, end));
    } catch {
      throw e;
    }
  }
}
