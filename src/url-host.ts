/** A host as a URL writes it: an IPv6 address in brackets (`http://[::1]:5000`, not `http://::1:5000`). */
export const urlHost = (host: string): string => (host.includes(':') ? `[${host}]` : host);
