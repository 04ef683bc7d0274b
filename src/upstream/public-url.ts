// The one form in which the upstream voice server's address leaves the process: /health, session
// records (answered over HTTP and kept in the history) and the OpenAPI document all show this; and the
// parts of it that are secret, scrubbed from whatever the voice server says.
//
// Only scheme, host, port and path are kept. User info is a password by definition; the query is where
// upstream services conventionally take their keys (`?token=`, `?api_key=`), and nothing tells a secret
// parameter from a harmless one, so all of it goes; the fragment is never sent to the server (ws refuses
// a URL with one), so it names nothing a reader could use. What remains tells an operator which server
// and endpoint were used, which is all a reader of these places needs.

import { splitZone, withZone } from '../zoned-url.js';

/** `ws://user:pw@host:5050/voice?token=x#f` -> `ws://host:5050/voice`. Idempotent. */
export function publicServerUrl(url: string): string {
  try {
    // A zone (`[fe80::1%25eth0]`), which URL parsers refuse, is kept: it names where the address is.
    const { text, zone } = splitZone(url);
    const u = new URL(text);
    return withZone(`${u.protocol}//${u.host}${u.pathname}`, zone);
  } catch {
    // Never the text itself: an unparsable value may still hold a secret.
    return '(invalid URL)';
  }
}

/**
 * Shorter than this, a part of the URL is not taken for a secret: a voice server's text is scrubbed of
 * every secret it could quote, and replacing `1` of `?v=1` everywhere would garble it for nothing.
 */
export const MIN_SECRET_CHARS = 4;

/**
 * What of the URL a voice server could quote back (in a text, an error or a close reason) that must not
 * reach devices, the log or the session history: the user info, raw and decoded, with the Basic
 * credentials the WebSocket client makes of it, and the query, whole and value by value. Longest first,
 * so that a part inside another is not replaced before it.
 */
export function serverUrlSecrets(url: string): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [];
  }
  const found = new Set<string>();
  const decode = percentDecoded;
  if (u.username || u.password) {
    // Basic credentials from the user info as written (what a client may send) or decoded (what we send).
    for (const userInfo of [`${u.username}:${u.password}`, `${decode(u.username)}:${decode(u.password)}`]) {
      found.add(userInfo).add(Buffer.from(userInfo).toString('base64'));
    }
    for (const part of [u.username, u.password, decode(u.username), decode(u.password)]) found.add(part);
  }
  if (u.search.length > 1) {
    found.add(u.search.slice(1));
    for (const raw of u.search.slice(1).split('&')) {
      const value = raw.slice(raw.indexOf('=') + 1);
      found.add(value).add(decode(value.replaceAll('+', ' ')));
    }
  }
  return [...found].filter((s) => s.length >= MIN_SECRET_CHARS).sort((a, b) => b.length - a.length);
}

/** A URL part with its percent-escapes decoded; as written when they do not decode (a stray `%`). */
export function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
