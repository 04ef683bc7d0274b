// How a request path is compared with a route's path, in one place for the HTTP router and the hub:
// as ASP.NET Core's routing does, literal segments match without letter case and one trailing slash
// is ignored; parameter segments (device ids) are taken as sent, case kept. Kestrel decodes the path
// before routing except `%2F`, which stays three characters (an encoded slash never splits a
// segment), so a literal matches its percent-encoded forms too.
import { caseKey } from '../ignore-case.js';

/** The form a literal segment of a route template is compared in. */
export const literalKey = (segment: string): string => caseKey(segment);

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

/**
 * The path with its dot segments removed (RFC 3986 section 5.2.4), as Kestrel removes them before routing:
 * `/api/../health` and `/./health` are `/health`, `/health/.` is `/health/`, and `..` never climbs above
 * the root. A segment spelt `%2e%2E` counts (Kestrel decodes the path first); one holding `%2F` is no
 * dot segment, since an encoded slash never separates segments. Other segments keep their encoding.
 */
export function withoutDotSegments(path: string): string {
  if (!path.startsWith('/') || !mayHaveDotSegments(path)) return path;
  const segments = path.split('/');
  const out: string[] = [];
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i]!;
    const dots = /^(?:\.|%2e){1,2}$/i.test(segment) ? segment.replace(/%2e/gi, '.') : '';
    if (dots === '') {
      out.push(segment);
      continue;
    }
    if (dots === '..') out.pop();
    // A dot segment at the end leaves the slash before it: `/a/b/..` is `/a/`.
    if (i === segments.length - 1) out.push('');
  }
  return `/${out.join('/')}`;
}

/** False when `path` has no dot segment for certain: no segment of it starts with `.` or `%2e`. */
export const mayHaveDotSegments = (path: string): boolean => /\/(?:\.|%2e)/i.test(path);

/** The path without one trailing slash (`/` itself stays). */
export const withoutTrailingSlash = (path: string): string => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);

/** Whether `path` (as requested, dot segments and all) names the all-literal route path `template`. */
export function sameRoutePath(template: string, path: string): boolean {
  return requestedKey(withoutTrailingSlash(withoutDotSegments(path))) === literalKey(template);
}

/**
 * uWS patterns that match every path with as many segments as `template`, whatever their case (uWS
 * matches literals exactly), with and without one trailing slash. The handler behind them checks
 * sameRoutePath and lets uWS go on to the next route (setYield) for any other path. A path with dot
 * segments can have any number of segments: see DOTTED_PATHS and dotted-paths.ts.
 */
export function uwsPatterns(template: string): readonly string[] {
  const pattern = template
    .split('/')
    .slice(1)
    .map((_, i) => `/:s${i}`)
    .join('');
  return [pattern, `${pattern}/`];
}

/**
 * The uWS pattern of every path of two segments or more: a WebSocket route for paths with dot segments
 * sits behind it (uWS yields every request without an upgrade before any script runs). Every such path
 * has two segments (a dot segment and one other) or is `/`. Not `/*`, which the HTTP API takes: uWS
 * refuses a second route of one method and pattern.
 */
export const DOTTED_PATHS = '/:s0/*';
