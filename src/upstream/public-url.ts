// The one form in which the upstream voice server's address leaves the process: /health, session
// records (answered over HTTP and kept in the history) and the OpenAPI document all show this.
//
// Only scheme, host, port and path are kept. User info is a password by definition; the query is where
// upstream services conventionally take their keys (`?token=`, `?api_key=`), and nothing tells a secret
// parameter from a harmless one, so all of it goes; the fragment is never sent to the server (ws refuses
// a URL with one), so it names nothing a reader could use. What remains tells an operator which server
// and endpoint were used, which is all a reader of these places needs.

/** `ws://user:pw@host:5050/voice?token=x#f` -> `ws://host:5050/voice`. Idempotent. */
export function publicServerUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    // Never the text itself: an unparsable value may still hold a secret.
    return '(invalid URL)';
  }
}
