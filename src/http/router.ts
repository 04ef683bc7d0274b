// The route table: one entry per endpoint, matched by method and path template. The same table
// feeds the OpenAPI document, so a route cannot exist without being described.
import type { Principal } from '../auth/tokens.js';
import { literalKey, requestedKey, withoutTrailingSlash } from './route-path.js';
import type { JsonSchema } from './schemas.js';

export type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';

export interface RequestInfo {
  readonly method: string;
  /** Path without query, percent-encoding kept, dot segments removed (route-path.ts, withoutDotSegments). */
  readonly path: string;
  readonly query: string;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string>>;
  /** True when the request arrived over TLS. */
  readonly secure: boolean;
}

export interface RouteContext {
  readonly request: RequestInfo;
  readonly params: Readonly<Record<string, string>>;
  readonly body: unknown;
  /** Set when the route's auth requirement produced one. */
  readonly principal: Principal | undefined;
}

export interface Reply {
  status: number;
  /** Serialised as JSON unless `text` is given. */
  body?: unknown;
  text?: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
}

/**
 * What a route needs before its handler runs (docs/security.md, "Authentication"):
 * - `apiKey`: `X-API-Key` from `ApiKeys` when that list is non-empty;
 * - `bearer`: 'any' a valid device or admin token, 'admin' an admin token, 'voice' a valid token only
 *   when `VoiceService.RequireDeviceToken` is on;
 * - `device`: the path parameter naming the device a device token must belong to (403 otherwise), so
 *   that it is refused before the body is looked at;
 * - `deviceInBody`: the body names that device (the voice routes: the session's device), so only the
 *   handler can check it, once the body is valid (403 otherwise).
 * The OpenAPI document derives each route's 401 and 403 from these and the server's configuration.
 */
export interface AuthRequirement {
  apiKey?: boolean;
  bearer?: 'any' | 'admin' | 'voice';
  device?: string;
  deviceInBody?: true;
}

export interface ResponseDoc {
  description: string;
  schema?: JsonSchema;
  contentType?: string;
  /** Other media types the same answer comes in, chosen by the request's `Accept`. */
  alternatives?: Record<string, JsonSchema>;
  /** Response headers the answer carries, by name: what each says. */
  headers?: Record<string, string>;
}

export interface Route {
  method: Method;
  /** Template with `{name}` segments, e.g. `/api/device/{deviceId}/status`. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  auth: AuthRequirement;
  /** Name of the request body schema (see schemas.ts); the route then requires a JSON body. */
  body?: string;
  responses: Record<number, ResponseDoc>;
  /**
   * False for the routes that serve the documentation itself (Swagger UI and the OpenAPI document):
   * they are left out of the document, as ASP.NET leaves them out. Every other route is documented.
   */
  documented?: false;
  /**
   * Also answers every method no other route of its path names, as an ASP.NET endpoint mapped with `Map`
   * rather than `MapGet` (MapHealthChecks): such a path has no 405. The document lists `method` alone.
   */
  anyMethod?: true;
  handler(ctx: RouteContext): Reply | Promise<Reply>;
}

/** One segment of a route's template: a literal (in its compared form and as the template spells it) or a parameter's name. */
interface Segment {
  readonly literal: string | undefined;
  readonly spelled: string | undefined;
  readonly param: string | undefined;
}

interface CompiledRoute {
  route: Route;
  segments: Segment[];
}

/** A requested segment whose compared form has not been needed yet (requestedKey can answer undefined). */
const NOT_YET = null;

export type Match =
  | { kind: 'found'; route: Route; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allow: string[] }
  | { kind: 'not_found' }
  | { kind: 'bad_path' };

export class Router {
  private readonly compiled: CompiledRoute[];

  constructor(readonly routes: readonly Route[]) {
    this.compiled = routes.map((route) => ({
      route,
      segments: route.path
        .split('/')
        .slice(1)
        .map((s) =>
          s.startsWith('{') && s.endsWith('}')
            ? { literal: undefined, spelled: undefined, param: s.slice(1, -1) }
            : { literal: literalKey(s), spelled: s.includes('%') ? undefined : s, param: undefined },
        ),
    }));
  }

  match(method: string, rawPath: string): Match {
    // ASP.NET routing ignores one trailing slash and letter case in literal segments (route-path.ts).
    const path = withoutTrailingSlash(rawPath);
    // The parts are those after each `/`. Each is taken out of the path only when a route needs it as a
    // string (a parameter, a part not spelt as the template spells it); its compared form is made once,
    // when a route first needs it, not again for every route tried; a params object only for a route
    // whose literals got as far as a parameter.
    const count = slashes(path);
    let keys: Array<string | undefined | typeof NOT_YET> | undefined;
    let allow: Set<string> | undefined;
    let anyMethod: Match | undefined;
    for (const c of this.compiled) {
      if (c.segments.length !== count) continue;
      let params: Record<string, string> | undefined;
      let ok = true;
      let next = path.indexOf('/') + 1;
      for (let i = 0; i < count && ok; i++) {
        const seg = c.segments[i]!;
        const start = next;
        let end = path.indexOf('/', start);
        if (end === -1) end = path.length;
        next = end + 1;
        // A part spelt as the template spells it (one without `%`) is the literal itself.
        if (seg.spelled !== undefined && end - start === seg.spelled.length && path.startsWith(seg.spelled, start)) continue;
        const part = path.slice(start, end);
        if (seg.literal !== undefined) {
          keys ??= new Array<typeof NOT_YET>(count).fill(NOT_YET);
          let key = keys[i];
          if (key === NOT_YET) key = keys[i] = requestedKey(part);
          ok = seg.literal === key;
        } else if (part === '') ok = false;
        // uWS hands over the target as text, each byte that is not UTF-8 (a raw `\xE9` from a Latin-1
        // client) made U+FFFD: every such id would name the one device `\uFFFD`. Raw non-ASCII has no
        // place in a request target (RFC 9112 section 3.2, RFC 3986 section 2): 400, as for the same bytes
        // percent-encoded (`%E9`). Raw UTF-8 (`é`) decodes whole and is served.
        else if (part.includes('\uFFFD')) return { kind: 'bad_path' };
        else {
          try {
            (params ??= {})[seg.param!] = part.includes('%') ? decodeURIComponent(part) : part;
          } catch {
            return { kind: 'bad_path' };
          }
        }
      }
      if (!ok) continue;
      if (c.route.method === method) return { kind: 'found', route: c.route, params: params ?? {} };
      if (c.route.anyMethod) anyMethod ??= { kind: 'found', route: c.route, params: params ?? {} };
      (allow ??= new Set()).add(c.route.method);
    }
    if (anyMethod) return anyMethod;
    return allow ? { kind: 'method_not_allowed', allow: [...allow].sort() } : { kind: 'not_found' };
  }
}

function slashes(path: string): number {
  let n = 0;
  for (let i = path.indexOf('/'); i !== -1; i = path.indexOf('/', i + 1)) n++;
  return n;
}
