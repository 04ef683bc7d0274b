// The nesting limit of ASP.NET Core's JSON reading: its hub protocol and handshake read with a
// Utf8JsonReader of default options, whose MaxDepth is 64, so a message nesting more objects and
// arrays than that (the message's own object counts) is an error and closes the connection, even
// where the deep part sits in a property nobody reads.

export const MAX_JSON_DEPTH = 64;

/** Whether `value` (parsed JSON) nests more than `max` objects and arrays. Iterative: depth costs no stack. */
export function nestsDeeperThan(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const stack: Array<{ readonly value: object; readonly depth: number }> = [];
  if (typeof value === 'object' && value !== null) stack.push({ value, depth: 1 });
  while (stack.length > 0) {
    const { value: container, depth } = stack.pop()!;
    if (depth > max) return true;
    for (const child of Array.isArray(container) ? container : Object.values(container)) {
      if (typeof child === 'object' && child !== null) stack.push({ value: child, depth: depth + 1 });
    }
  }
  return false;
}
