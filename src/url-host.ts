/**
 * A host as a URL writes it: an IPv6 address in brackets (`http://[::1]:5000`, not `http://::1:5000`),
 * its zone's `%` as `%25` (RFC 6874: `[fe80::1%25eth0]`; a bare `%` makes no URL any client reads).
 */
export const urlHost = (host: string): string => (host.includes(':') ? `[${host.replace('%', '%25')}]` : host);
