// IPv6 zone ids in URLs (RFC 6874): a link-local address names an interface as well, `fe80::1%eth0`,
// written `[fe80::1%25eth0]` in a URL. WHATWG URL parsers (Node's `URL`, browsers) refuse any zone, so a
// URL naming one is taken apart here: the zone is held beside a URL that parses, and put back where the
// URL is shown or dialled. A zone means something only on the machine that names it: it is never sent
// (a Host header carries none), only used to pick the interface a connection leaves by.

/** `scheme://[userinfo@][v6%25zone]...`: the part up to the address, the zone, and the rest from `]`. */
const ZONED = /^([a-z][a-z\d+.-]*:\/\/(?:[^/?#@[\]]*@)?\[[\da-f:.]+)%25([\w.~-]+)(\][^]*)$/i;

export interface ZoneSplit {
  /** The URL without its zone (`http://[fe80::1]:5000/`): what `new URL` takes. */
  readonly text: string;
  /** The zone as the system names it (`eth0`); undefined when the URL names none. */
  readonly zone: string | undefined;
}

/** `http://[fe80::1%25eth0]:5000/x` -> `{ text: 'http://[fe80::1]:5000/x', zone: 'eth0' }`. */
export function splitZone(url: string): ZoneSplit {
  const m = ZONED.exec(url);
  return m ? { text: m[1]! + m[3]!, zone: m[2]! } : { text: url, zone: undefined };
}

/** `http://[fe80::1]:5000/x` with zone `eth0` -> `http://[fe80::1%25eth0]:5000/x`; unchanged without a zone. */
export function withZone(url: string, zone: string | undefined): string {
  if (zone === undefined) return url;
  const end = url.indexOf(']');
  return end < 0 ? url : `${url.slice(0, end)}%25${zone}${url.slice(end)}`;
}

/** What a connection dials for a bracketed `hostname` (`[fe80::1]`) and its zone: `fe80::1%eth0`. */
export const zonedAddress = (hostname: string, zone: string): string => `${hostname.replace(/^\[|\]$/g, '')}%${zone}`;
