// How a request path is compared with a route's path, in one place for the HTTP router and the hub:
// as ASP.NET Core's routing does, literal segments match without letter case and one trailing slash
// is ignored; parameter segments (device ids) are taken as sent, case kept.

/** The form a literal segment is compared in. */
export const literalKey = (segment: string): string => segment.toLowerCase();

/** The path without one trailing slash (`/` itself stays). */
export const withoutTrailingSlash = (path: string): string => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);

/** Whether `path` (as requested) names the all-literal route path `template`. */
export function sameRoutePath(template: string, path: string): boolean {
  return literalKey(withoutTrailingSlash(path)) === literalKey(template);
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
