// The nesting limits of what clients send. ASP.NET Core reads JSON (hub messages, the hub handshake,
// request bodies) with System.Text.Json, whose default MaxDepth is 64 (32 for request bodies, below): a value nesting more objects and
// arrays than that (the outermost counts) is an error, even where the deep part sits in a property
// nobody reads. Its MessagePack hub protocol reads with MessagePack-CSharp's UntrustedData security,
// whose MaximumObjectGraphDepth is 500. Besides matching the reference, a limit keeps what is done per
// nested level (a path to an ill-formed string, a validator's walk) bounded.

export const MAX_JSON_DEPTH = 64;
/**
 * Request bodies nest less: ASP.NET Core MVC reads them with its own JsonOptions, whose MaxDepth is
 * MvcOptions.DefaultMaxModelBindingRecursionDepth, 32, not System.Text.Json's 64 (the hub's JSON
 * protocol and the configuration files keep 64). A body nesting 33 levels, even in a property no
 * request names, is a 400 there.
 */
export const MAX_BODY_DEPTH = 32;
export const MAX_MESSAGEPACK_DEPTH = 500;

/**
 * Whether `value` (a decoded JSON value) nests more than `max` objects and arrays. Byte arrays are
 * data, not nesting. Recursive, but never deeper than `max` + 1 calls, and without allocating: it runs
 * on every JSON hub message, and costs at most about half of what JSON.parse took for the same text.
 * MessagePack is counted in its bytes before it is decoded (msgpack-walk.ts): its decoder, unlike
 * JSON.parse, spent 18 ms building 60,000 levels of one 64 KiB message.
 */
export function nestsDeeperThan(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  return isContainer(value) && deeper(value, max);
}

const isContainer = (value: unknown): value is object => typeof value === 'object' && value !== null && !ArrayBuffer.isView(value);

/** `container` is one level; `levels` is how many it may still take, itself included. */
function deeper(container: object, levels: number): boolean {
  if (levels === 0) return true;
  if (Array.isArray(container)) {
    for (const child of container) if (isContainer(child) && deeper(child, levels - 1)) return true;
    return false;
  }
  for (const key in container) {
    const child = (container as Record<string, unknown>)[key];
    if (isContainer(child) && deeper(child, levels - 1)) return true;
  }
  return false;
}
