// Hub connections per client address. The hub's connections are anonymous until JoinSession (the device
// token travels in it), so without a bound per address one LAN host could take every place the hub has
// (Hub.MaximumConnections) by opening connections and pinging them, and devices were refused with 503.
// IPv6 is counted per /64 prefix: a host picks any number of addresses within its own prefix.

/**
 * The key a connection from `address` (uWS' text of the peer address) is counted under: IPv4 dotted,
 * an IPv4-mapped IPv6 address as its IPv4 address, other IPv6 as its /64 prefix (`2001:db8:0:1::/64`).
 */
export function addressKey(address: string): string {
  if (!address.includes(':')) return address;
  const groups = expandIpv6(address);
  if (groups === undefined) return address;
  const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
  if (mapped) return `${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`;
  // The prefix as an address is written, zeros compressed (`fe80::/64`, not `fe80:0:0:0::/64`).
  const prefix = new URL(`http://[${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}:0:0:0:0]`).hostname;
  return `${prefix.slice(1, -1)}/64`;
}

/** The eight 16-bit groups of an IPv6 address in any of its text forms; undefined when it is not one. */
function expandIpv6(text: string): number[] | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string): number[] | undefined => {
    if (part === '') return [];
    const groups: number[] = [];
    for (const group of part.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined;
      groups.push(parseInt(group, 16));
    }
    return groups;
  };
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  if (head === undefined || tail === undefined) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const missing = 8 - head.length - tail.length;
  if (missing < 1) return undefined;
  return [...head, ...new Array<number>(missing).fill(0), ...tail];
}

/** How many connections each address key holds, up to `limit` each (0: no limit, nothing is counted). */
export class AddressSlots {
  private readonly held = new Map<string, number>();

  constructor(private readonly limit: number) {}

  /** Takes a place for `key`; false when it holds its limit already (nothing is taken then). */
  take(key: string): boolean {
    if (this.limit === 0) return true;
    const count = this.held.get(key) ?? 0;
    if (count >= this.limit) return false;
    this.held.set(key, count + 1);
    return true;
  }

  release(key: string): void {
    if (this.limit === 0) return;
    const count = this.held.get(key) ?? 0;
    if (count <= 1) this.held.delete(key);
    else this.held.set(key, count - 1);
  }

  /** Addresses holding at least one place. */
  get size(): number {
    return this.held.size;
  }

  get max(): number {
    return this.limit;
  }
}
