// How a request path is compared with a route's path, in one place for the HTTP router and the hub:
// as ASP.NET Core's routing does, literal segments match without letter case and one trailing slash
// is ignored; parameter segments (device ids) are taken as sent, case kept. Kestrel decodes the path
// before routing except `%2F`, which stays three characters (an encoded slash never splits a
// segment), so a literal matches its percent-encoded forms too.

/** The form a literal segment of a route template is compared in. */
export const literalKey = (segment: string): string => segment.toLowerCase();

/**
 * The form a requested path or segment is compared with literals in: decoded as Kestrel decodes it,
 * `%2F` kept. Undefined when it is not valid percent-encoding (nothing literal matches it then).
 */
export function requestedKey(raw: string): string | undefined {
  if (!raw.includes('%')) return literalKey(raw);
  try {
    return literalKey(decodeURIComponent(raw.replace(/%2F/gi, '%252F')));
  } catch {
    return undefined;
  }
}

/** The path without one trailing slash (`/` itself stays). */
export const withoutTrailingSlash = (path: string): string => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);

/** Whether `path` (as requested) names the all-literal route path `template`. */
export function sameRoutePath(template: string, path: string): boolean {
  return requestedKey(withoutTrailingSlash(path)) === literalKey(template);
}

/**
 * uWS patterns that match every path with as many segments as `template`, whatever their case (uWS
 * matches literals exactly), with and without one trailing slash. The handler behind them checks
 * sameRoutePath and lets uWS go on to the next route (setYield) for any other path.
 */
export function uwsPatterns(template: string): readonly string[] {
  const pattern = template
    .split('/')
    .slice(1)
    .map((_, i) => `/:s${i}`)
    .join('');
  return [pattern, `${pattern}/`];
}
