// What the schemas' own vocabulary checks with at run time: the `x-timespan` keyword and the `ws-url`,
// `origin` and `allowed-hosts` formats. Both forms of the validators call these same functions: those ajv compiles
// (tests) through references, the standalone code in the bundle through this module's export (the
// names ajv.ts writes into that code). So a time span means the same in a configuration file, in
// PUT /api/config/device and in either form.
import { allowedHostEntry, allowedHostTexts } from '../host-names.js';
import { splitZone } from '../zoned-url.js';
import type { TimeSpanBounds } from './schema.js';
import { parseTimeSpan } from './timespan.js';

export const vocabulary = {
  isTimeSpanWithin,
  formats: {
    'ws-url': { type: 'string', validate: isWebSocketUrl },
    origin: { type: 'string', validate: isOrigin },
    'allowed-hosts': { type: 'string', validate: isAllowedHosts },
  },
} as const;

/** `ws://` or `wss://` with a host: the upstream link is a WebSocket. */
export function isWebSocketUrl(text: string): boolean {
  // A fragment is never sent to a server, and the WebSocket client refuses a URL that has one at
  // every connection attempt: a session start would fail each time with a 502 instead of the
  // service refusing the setting once, at start. `#` can only begin a fragment (`%23` is the
  // character), so its presence is the test, an empty fragment included.
  if (text.includes('#')) return false;
  try {
    // A link-local server's zone (`[fe80::1%25eth0]`), which URL parsers refuse, is dialled (upstream/websocket.ts).
    const url = new URL(splitZone(text).text);
    return (url.protocol === 'ws:' || url.protocol === 'wss:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * An origin exactly as a browser sends it in `Origin`: scheme `http` or `https`, a host, a port only
 * when it is not the scheme's default, nothing after; letter case is free (origins compare without it).
 * A `*` in the host is a wildcard meant, which origins do not have (the URL parser takes it as a letter):
 * `http://*.example.com` would match only that text, which no browser sends.
 */
export function isOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === text.toLowerCase() && !url.hostname.includes('*');
  } catch {
    return false;
  }
}

/**
 * `AllowedHosts`: at least one entry, each one a request's Host could match. An entry that never can
 * (`http://pi.local`, `pi.local/`) means a name meant and refused with a 400 at every request.
 */
export function isAllowedHosts(text: string): boolean {
  const entries = allowedHostTexts(text);
  return entries.length > 0 && entries.every((e) => allowedHostEntry(e) !== undefined);
}

/** Whether `text` is a time span within the node's bounds. */
export function isTimeSpanWithin(text: string, bounds: TimeSpanBounds): boolean {
  try {
    const ms = parseTimeSpan(text);
    return ms >= parseTimeSpan(bounds.minimum) && ms <= parseTimeSpan(bounds.maximum);
  } catch {
    return false;
  }
}
