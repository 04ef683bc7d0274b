// What every request meets before routing, on the API and on the hub's negotiate and upgrade alike:
// host filtering (ASP.NET Core's HostFilteringMiddleware over `AllowedHosts`) and, when
// `Server.HttpsRedirect` is on, the redirect of plain HTTP to the HTTPS listener.
import { hostName } from '../host-names.js';
import { overTls } from './forwarded-proto.js';
import { hostMatcher } from './hosts.js';
import { sameRoutePath } from './route-path.js';

/** The parts of a request the gate looks at, copied out of uWS's request by the caller. */
export interface GateRequest {
  /** The Host header; '' when absent or empty. */
  readonly host: string;
  readonly path: string;
  /** Without the `?`. */
  readonly query: string;
  /** The request came in over TLS. */
  readonly secure: boolean;
  /** X-Forwarded-Proto, '' when absent: a TLS-terminating proxy in front is as good as TLS. */
  readonly forwardedProto: string;
}

export interface GateRefusal {
  readonly status: number;
  /** Plain-text body; empty for redirects. */
  readonly text: string;
  readonly headers: Readonly<Record<string, string>>;
}

export type RequestGate = (request: GateRequest) => GateRefusal | undefined;

export interface GateOptions {
  allowedHosts: string;
  /** Set when plain HTTP must be redirected: the HTTPS port as listening (read per request). */
  httpsRedirectPort?: () => number | undefined;
  /** Host name for a redirect when the request named none (or an unusable one). */
  fallbackHost: string;
  /**
   * The route plain HTTP serves whatever the redirect setting (technicians and probes reach `/health`
   * that way): every path the route answers (any letter case, one trailing slash, percent-encoded) and
   * nothing else.
   */
  neverRedirected: string;
}

/**
 * ASP.NET's failure page says this in HTML (`text/html`, Http.Sys's wording); we answer the same words
 * as plain text, which is what a device or curl shows best.
 */
export const INVALID_HOST_TEXT = 'Bad Request - Invalid Hostname\nHTTP Error 400. The request hostname is invalid.\n';


/** What RFC 3986 does not allow in a URI as it is: anything outside printable ASCII, and `"<>\^`{|}`. */
const NOT_URI_TEXT = /[^\x21-\x7e]|["<>\\^`{|}]/gu;

/**
 * The path or query of a request as URI text, each character a URI may not hold percent-encoded as its
 * UTF-8 bytes, as ASP.NET Core writes a redirect's path (PathString.ToUriComponent). uWS hands over a raw
 * UTF-8 target (`/api/device/küche`) as text, and a Location with those bytes raw is read as Latin-1 by
 * fetch and other clients, which then follow it to another path (`k%C3%83%C2%BCche`). `%XX` already in
 * the target stays as it is.
 */
const asUriText = (text: string): string => text.replace(NOT_URI_TEXT, (c) => Buffer.from(c).toString('hex').replace(/../g, '%$&').toUpperCase());

export function requestGate(options: GateOptions): RequestGate {
  const allowed = hostMatcher(options.allowedHosts);
  return (request): GateRefusal | undefined => {
    // An empty (or, over HTTP/1.0, missing) Host is allowed: AllowEmptyHosts, true by default.
    if (request.host !== '' && !allowed(request.host)) {
      return { status: 400, text: INVALID_HOST_TEXT, headers: {} };
    }
    const httpsPort = options.httpsRedirectPort?.();
    if (httpsPort === undefined || overTls(request.secure, request.forwardedProto) || sameRoutePath(options.neverRedirected, request.path)) return undefined;
    const name = hostName(request.host) ?? options.fallbackHost;
    const authority = httpsPort === 443 ? name : `${name}:${httpsPort}`;
    const query = request.query ? `?${request.query}` : '';
    // 308, not 301/302: the method and body are kept (a redirected POST stays a POST).
    return { status: 308, text: '', headers: { Location: `https://${authority}${asUriText(request.path)}${asUriText(query)}` } };
  };
}
