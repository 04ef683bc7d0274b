// Cross-origin resource sharing: the one policy the API, /health and the hub's negotiate and WebSocket
// share, from `Cors:AllowedOrigins`. Answers follow ASP.NET Core's CORS middleware with a policy of named
// origins that allows credentials (the SignalR browser client sends them): an allowed origin is echoed
// exactly (never `*`) with `Access-Control-Allow-Credentials`; a request from any other origin is
// answered without CORS headers, so the browser withholds the answer from the page; a preflight is
// answered 204 either way, with the allow headers only for an allowed origin.

/** Every method the API and negotiate use. */
const ALLOW_METHODS = 'GET, POST, PUT, DELETE, OPTIONS';
/** What the API's clients (bearer tokens, API key, JSON bodies) and the SignalR client send. */
export const CORS_ALLOW_HEADERS = 'authorization, content-type, x-api-key, x-requested-with, x-signalr-user-agent';
/** How long a browser may cache a preflight answer, in seconds. */
const MAX_AGE_SECONDS = '600';

export interface CorsPolicy {
  /** Whether `origin` (the request's `Origin`, case as sent) is one of the configured origins. */
  listed(origin: string): boolean;
  /**
   * Whether a request from `origin` may open a hub connection: no Origin (not a browser), the page's own
   * origin (`origin` names the request's scheme, `secure` saying which, and its Host), or a listed
   * origin. Browsers apply no CORS to WebSockets, so the hub checks this itself.
   */
  admits(origin: string, host: string, secure: boolean): boolean;
  /** Headers for an answer to a request with `origin` ('' when none): CORS headers when it is listed. */
  headers(origin: string): Readonly<Record<string, string>>;
  /** Headers for a preflight (`OPTIONS` with `Access-Control-Request-Method`), answered 204. */
  preflight(origin: string): Readonly<Record<string, string>>;
}

/**
 * What `headers` and `preflight` return when the policy adds nothing (no Origin, or no list to vary by):
 * one value, so that an answer is copied to add headers only when there are some.
 */
export const NO_CORS_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/** The ASCII lower case of an origin: browsers send it lower case, configuration may not. */
const key = (origin: string): string => origin.toLowerCase();

/**
 * What WebSocket libraries for microcontrollers send (arduinoWebSockets, the usual ESP8266/ESP32 client,
 * sets it by default). No browser sends it: a page loaded from a file has the opaque origin `null`. So
 * it is admitted as no Origin is, and devices on such firmware reach the hub without a setting.
 */
const FIRMWARE_ORIGIN = 'file://';

export function corsPolicy(allowedOrigins: readonly string[]): CorsPolicy {
  const allowed = new Set(allowedOrigins.map(key));
  const listed = (origin: string): boolean => origin !== '' && allowed.has(key(origin));
  // Caches key on the Origin of a request as soon as the list could answer differently per origin.
  const vary = (origin: string): Readonly<Record<string, string>> => (origin !== '' && allowed.size > 0 ? { Vary: 'Origin' } : NO_CORS_HEADERS);
  const headers = (origin: string): Readonly<Record<string, string>> =>
    listed(origin)
      ? { 'Access-Control-Allow-Origin': origin, 'Access-Control-Allow-Credentials': 'true', Vary: 'Origin' }
      : vary(origin);
  return {
    listed,
    admits: (origin, host, secure) => origin === '' || origin === FIRMWARE_ORIGIN || listed(origin) || sameOrigin(origin, host, secure),
    headers,
    preflight: (origin) =>
      listed(origin)
        ? { ...headers(origin), 'Access-Control-Allow-Methods': ALLOW_METHODS, 'Access-Control-Allow-Headers': CORS_ALLOW_HEADERS, 'Access-Control-Max-Age': MAX_AGE_SECONDS }
        : vary(origin),
  };
}

/**
 * True when `origin` is the origin the request was sent to, scheme included: the page is the service's
 * own. The Host header names no scheme, and leaves out the scheme's default port: `http://pi` and
 * `https://pi` both send `Host: pi`, so without the scheme a page of another server on the other
 * default port (`https://pi` beside a service on port 80) passed as the service's own.
 */
function sameOrigin(origin: string, host: string, secure: boolean): boolean {
  try {
    const url = new URL(origin);
    return host !== '' && url.protocol === (secure ? 'https:' : 'http:') && url.host === host.toLowerCase();
  } catch {
    return false;
  }
}


/** `headers` with the policy's `cors` headers added; a `Vary` of both lists both, as caches need. */
export function withCorsHeaders(headers: Readonly<Record<string, string>> | undefined, cors: Readonly<Record<string, string>>): Record<string, string> {
  const out = { ...headers, ...cors };
  if (headers?.Vary && cors.Vary) out.Vary = `${headers.Vary}, ${cors.Vary}`;
  return out;
}

/**
 * A preflight is an OPTIONS request from a page (an `Origin`) that names the method it is asking for, as
 * the Fetch standard sends it and ASP.NET Core's CORS middleware and routing read it: without an Origin
 * it is a plain OPTIONS, routed (405 with `Allow`; /health's report), not answered 204.
 */
export const isPreflight = (method: string, headers: { readonly origin?: string; readonly 'access-control-request-method'?: string }): boolean =>
  method === 'OPTIONS' && !!headers.origin && headers['access-control-request-method'] !== undefined;
