// Whether a request counts as made over TLS, for every check that cares: the HTTPS redirect and the hub's
// own-origin test.
import { sameIgnoringCase } from '../ignore-case.js';

/**
 * Whether the request (and the page it came from) was made over TLS: it came over TLS, or a proxy in front
 * that terminated TLS says so (the first `X-Forwarded-Proto` entry, set by the proxy nearest the client).
 * A browser can add that header neither to a WebSocket handshake nor to a cross-origin negotiate without a
 * preflight that an unlisted origin fails.
 */
export const overTls = (secure: boolean, forwardedProto: string): boolean => secure || sameIgnoringCase(forwardedProto.split(',')[0]!.trim(), 'https');
