// The nesting limit of ASP.NET Core's JSON reading: its hub protocol and handshake read with a
// Utf8JsonReader of default options, whose MaxDepth is 64, so a message nesting more objects and
// arrays than that (the message's own object counts) is an error and closes the connection, even
// where the deep part sits in a property nobody reads.

export const MAX_JSON_DEPTH = 64;

/**
 * Whether `value` (parsed JSON) nests more than `max` objects and arrays. Recursive, but never deeper
 * than `max` + 1 calls, and without allocating: it runs on every JSON message.
 */
export function nestsDeeperThan(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  return typeof value === 'object' && value !== null && deeper(value, max);
}

/** `container` is one level; `levels` is how many it may still take, itself included. */
function deeper(container: object, levels: number): boolean {
  if (levels === 0) return true;
  if (Array.isArray(container)) {
    for (const child of container) if (typeof child === 'object' && child !== null && deeper(child, levels - 1)) return true;
    return false;
  }
  for (const key in container) {
    const child = (container as Record<string, unknown>)[key];
    if (typeof child === 'object' && child !== null && deeper(child, levels - 1)) return true;
  }
  return false;
}
