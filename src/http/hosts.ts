// Host filtering as ASP.NET Core's HostFilteringMiddleware reads `AllowedHosts`: `*` allows any host;
// otherwise a `;`-separated list of names, `*.example.com` wildcards, ports ignored, IPv6 literals
// in brackets, Unicode names as punycode; and what a well-formed Host is at all (parseHost).
import { isIPv6 } from 'node:net';
import { domainToASCII } from 'node:url';
import { trimOws } from './ows.js';

export type HostMatcher = (host: string) => boolean;

/** A Host header (RFC 9110 `uri-host [":" port]`) taken apart; names lower-cased, IPv6 in brackets. */
export interface HostAuthority {
  readonly name: string;
  readonly port?: number;
  /** `name[:port]`, safe to put into a URL. */
  readonly authority: string;
}

const LABEL = /^[a-z0-9_-]{1,63}$/;
const IPV4_OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = new RegExp(`^${IPV4_OCTET}(?:\\.${IPV4_OCTET}){3}$`);
/** WHATWG URL parsers read a name whose last label is a number (decimal or 0x) as an IPv4 address. */
const NUMERIC_LABEL = /^(?:\d+|0x[0-9a-f]*)$/;

/**
 * Parses a Host header value as RFC 3986 `host [":" port]`: an IPv6 literal in brackets (no zone, no
 * IPvFuture), a dotted-quad IPv4 address, or a name. Stricter than RFC 3986's reg-name, which also
 * allows sub-delimiters (`!$&'()*+,;=`) and percent-encoding: no DNS or mDNS name has them, and each
 * would let a Host value change the meaning of a URL built from it. A name is dot-separated labels of
 * letters, digits, `-` and `_` (at most 63 each, 253 in all, one trailing dot allowed); one that ends in
 * a numeric label must be a valid IPv4 address. The port is 1 to 65535. Unicode names must arrive as
 * punycode, as HTTP sends them. Undefined when the value is none of these.
 */
export function parseHost(value: string): HostAuthority | undefined {
  const h = trimOws(value).toLowerCase();
  let name: string;
  let rest: string;
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    // No zone id (`%eth0`): it means something only on the sender's own machine.
    if (end < 0 || h.slice(1, end).includes('%') || !isIPv6Text(h.slice(1, end))) return undefined;
    // The canonical text (`[0:0::1]` -> `[::1]`), as every URL parser writes it.
    name = new URL(`http://${h.slice(0, end + 1)}/`).hostname;
    rest = h.slice(end + 1);
  } else {
    const colon = h.indexOf(':');
    name = colon < 0 ? h : h.slice(0, colon);
    rest = colon < 0 ? '' : h.slice(colon);
    if (!isHostName(name)) return undefined;
  }
  if (rest === '') return { name, authority: name };
  if (!/^:\d{1,5}$/.test(rest)) return undefined;
  const port = Number(rest.slice(1));
  if (port < 1 || port > 65535) return undefined;
  return { name, port, authority: `${name}:${port}` };
}

/**
 * Node's isIPv6, asked only of text with a colon, as every IPv6 address has: its first call compiles
 * Node's IPv6 pattern (10-12 ms measured here), which every start paid for the default entry `*`.
 */
function isIPv6Text(text: string): boolean {
  return text.includes(':') && isIPv6(text);
}

function isHostName(name: string): boolean {
  const bare = name.endsWith('.') ? name.slice(0, -1) : name;
  if (bare.length === 0 || bare.length > 253) return false;
  const labels = bare.split('.');
  if (!labels.every((l) => LABEL.test(l))) return false;
  return !NUMERIC_LABEL.test(labels.at(-1)!) || (bare === name && IPV4.test(bare));
}

/** Host name without port, lower-case; `[::1]:5000` -> `[::1]`. Undefined when malformed (see parseHost). */
export function hostName(hostHeader: string): string | undefined {
  return parseHost(hostHeader)?.name;
}

/** An `AllowedHosts` entry as it is compared: lower-case, no port, IPv6 in brackets, punycode. */
function normalizeEntry(entry: string): string {
  const e = entry.trim().toLowerCase();
  if (isIPv6Text(e)) return hostName(`[${e}]`) ?? `[${e}]`;
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
  // Even `*` allows only well-formed hosts: Kestrel answers 400 to a malformed Host before any
  // middleware runs, and a malformed one must never reach a URL or a redirect built from it.
  const anyHost = entries.length === 0 || entries.some((e) => TOP_LEVEL_WILDCARDS.has(e));
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
