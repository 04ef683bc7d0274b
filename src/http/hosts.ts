// Host filtering as ASP.NET Core's HostFilteringMiddleware reads `AllowedHosts`: `*` allows any host;
// otherwise a `;`-separated list of names, `*.example.com` wildcards, ports ignored, IPv6 literals
// in brackets, Unicode names as punycode. What a well-formed Host is at all, and what an entry means,
// is host-names.ts: configuration refuses an entry that could never match with the same grammar.
import { ANY_HOST_ENTRIES, allowedHostEntry, allowedHostTexts, hostName } from '../host-names.js';

export type HostMatcher = (host: string) => boolean;

export function hostMatcher(allowedHosts: string): HostMatcher {
  // Configuration has refused any entry that gives no name (allowedHostEntry), so none is dropped here.
  const entries = allowedHostTexts(allowedHosts).flatMap((e) => allowedHostEntry(e) ?? []);
  // Even `*` allows only well-formed hosts: Kestrel answers 400 to a malformed Host before any
  // middleware runs, and a malformed one must never reach a URL or a redirect built from it.
  const anyHost = entries.length === 0 || entries.some((e) => ANY_HOST_ENTRIES.has(e));
  const decide = (host: string): boolean => {
    const name = hostName(host);
    if (!name) return false;
    if (anyHost) return true;
    // `*.example.com` matches `a.example.com`, not `example.com` itself (HostString.MatchesAny).
    return entries.some((e) => (e.startsWith('*.') ? name.endsWith(e.slice(1)) && name.length >= e.length : name === e));
  };
  // Every request asks, and a client sends the same Host on each: the last verdict is kept, so the
  // parse runs once per change of Host rather than once per request.
  let lastHost: string | undefined;
  let lastVerdict = false;
  return (host: string) => {
    if (host !== lastHost) {
      lastVerdict = decide(host);
      lastHost = host;
    }
    return lastVerdict;
  };
}
