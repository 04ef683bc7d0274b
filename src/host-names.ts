// What a host is, in a Host header (RFC 9110 `uri-host [":" port]`) and in an `AllowedHosts` entry:
// one grammar for the transport that filters requests by it and the configuration that refuses an
// entry which could never match one.
import { isIPv6 } from 'node:net';
import { domainToASCII } from 'node:url';
import { trimOws } from './trim.js';

/** A Host header taken apart; names lower-cased, IPv6 in brackets. */
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

/** `*`, and the any-address entries Kestrel users write, switch filtering off (as ASP.NET does). */
export const ANY_HOST_ENTRIES: ReadonlySet<string> = new Set(['*', '[::]', '0.0.0.0']);

/**
 * An `AllowedHosts` entry as it is compared with a request's host name: lower-case, no port (one given
 * is ignored), IPv6 in brackets, Unicode names as punycode, `*.` kept before a name. Undefined for an
 * entry no Host header could ever match (`http://pi.local`, `pi.local/`, `pi.*`): ASP.NET Core keeps such
 * an entry and matches nothing with it, so the name meant is refused without a word.
 */
export function allowedHostEntry(entry: string): string | undefined {
  const e = entry.trim().toLowerCase();
  if (ANY_HOST_ENTRIES.has(e)) return e;
  if (isIPv6Text(e)) return hostName(`[${e}]`);
  const wildcard = e.startsWith('*.');
  const text = wildcard ? e.slice(2) : e;
  const name = hostName(text) ?? hostName(unicodeToAscii(text));
  if (name === undefined || (wildcard && name.startsWith('['))) return undefined;
  return wildcard ? `*.${name}` : name;
}

/** Of ASCII, only what names have; anything beyond ASCII, which the IDNA mapping decides on. */
const UNICODE_NAME = /^[a-z0-9._\u0080-\u{10ffff}-]+$/u;
const NON_ASCII = /[^\0-\x7f]/;

/**
 * `bücher.example:5000` -> `xn--bcher-kva.example:5000`; the text unchanged when it has no such name.
 * Only a name with letters beyond ASCII is mapped: domainToASCII parses a URL's host, so it would also
 * make `pi.local` of `pi.local/` or `pi%2elocal`, which no Host header is.
 */
function unicodeToAscii(text: string): string {
  const colon = text.lastIndexOf(':');
  const name = colon < 0 ? text : text.slice(0, colon);
  if (!NON_ASCII.test(name) || !UNICODE_NAME.test(name)) return text;
  const ascii = domainToASCII(name);
  return ascii === '' ? text : ascii + text.slice(name.length);
}

/** The entries of an `AllowedHosts` value (`;`-separated, blanks between them skipped), as written. */
export const allowedHostTexts = (allowedHosts: string): string[] =>
  allowedHosts
    .split(';')
    .map((e) => e.trim())
    .filter(Boolean);
