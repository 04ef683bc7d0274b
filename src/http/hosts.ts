// Host filtering as ASP.NET Core's HostFilteringMiddleware reads `AllowedHosts`: `*` allows any host;
// otherwise a `;`-separated list of names, `*.example.com` wildcards, ports ignored, IPv6 literals
// in brackets, Unicode names as punycode. Also used for the Origin of hub connections.
import { isIPv6 } from 'node:net';
import { domainToASCII } from 'node:url';

export type HostMatcher = (host: string) => boolean;

/** Host name without port, lower-case; `[::1]:5000` -> `[::1]`. Undefined when malformed. */
export function hostName(hostHeader: string): string | undefined {
  const h = hostHeader.trim().toLowerCase();
  if (!h) return undefined;
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    if (end < 0) return undefined;
    const rest = h.slice(end + 1);
    if (rest && !/^:\d{1,5}$/.test(rest)) return undefined;
    return h.slice(0, end + 1);
  }
  const parts = h.split(':');
  if (parts.length > 2) return undefined;
  if (parts.length === 2 && !/^\d{1,5}$/.test(parts[1]!)) return undefined;
  return parts[0] || undefined;
}

/** An `AllowedHosts` entry as it is compared: lower-case, no port, IPv6 in brackets, punycode. */
function normalizeEntry(entry: string): string {
  const e = entry.trim().toLowerCase();
  if (isIPv6(e)) return `[${e}]`;
  const name = hostName(e) ?? e;
  if (name.startsWith('[')) return name;
  const wildcard = name.startsWith('*.');
  const ascii = domainToASCII(wildcard ? name.slice(2) : name) || name;
  return wildcard ? `*.${ascii}` : ascii;
}

/** `*`, and the any-address entries Kestrel users write, switch filtering off (as ASP.NET does). */
const TOP_LEVEL_WILDCARDS = new Set(['*', '[::]', '0.0.0.0']);

export function hostMatcher(allowedHosts: string): HostMatcher {
  const entries = allowedHosts
    .split(';')
    .map((e) => e.trim())
    .filter(Boolean)
    .map(normalizeEntry);
  if (entries.length === 0 || entries.some((e) => TOP_LEVEL_WILDCARDS.has(e))) return () => true;
  return (host: string) => {
    const name = hostName(host);
    if (!name) return false;
    // `*.example.com` matches `a.example.com`, not `example.com` itself (HostString.MatchesAny).
    return entries.some((e) => (e.startsWith('*.') ? name.endsWith(e.slice(1)) && name.length >= e.length : name === e));
  };
}

/** Origin header (`https://pi.local:5000`) -> host part, for the hub's origin check. */
export function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}
