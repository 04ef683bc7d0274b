// Negotiation (SignalR's transport protocol, `POST [endpoint-base]/negotiate`): version 1 hands out a secret
// connectionToken used as `id=`, version 0 only a connectionId used as `id=`. Only WebSockets is
// offered; stateful reconnect to version 1 clients that ask (`useStatefulReconnect=true`) when the hub
// allows it. Pending negotiations are bounded in number and age, and per client address: when one
// address could fill the store, its oldest entries evicted everyone else's (a client negotiating
// 4,000 a second left others' negotiations ~2.5 s, and a slow device's upgrade found none: 404).
// Also the request-side helper shared by negotiate and upgrade: the bearer token.
import { randomBytes } from 'node:crypto';
import { bearerCredential } from '../auth/bearer.js';
import { AddressSlots } from './address-slots.js';
import { caseKey } from '../ignore-case.js';

export const NEGOTIATE_VERSION = 1;

/** 16 random bytes, URL-safe, like ASP.NET's connection ids. */
export function newId(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * A query parameter as ASP.NET Core reads one (`Request.Query[name]`): the name matched ignoring case,
 * several values joined with commas; null when absent.
 */
export function queryParam(query: URLSearchParams, name: string): string | null {
  const wanted = caseKey(name);
  let value: string | null = null;
  for (const [key, each] of query) {
    if (caseKey(key) === wanted) value = value === null ? each : `${value},${each}`;
  }
  return value;
}

/**
 * The connection id or token a request names (`id=`), as ASP.NET Core's connection dispatcher reads it:
 * an empty one is none (StringValues.IsNullOrEmpty), so an upgrade with `id=` opens a new connection as
 * one without it does, and a plain request with it is told an id is required.
 */
export function connectionIdParam(query: URLSearchParams): string | null {
  return queryParam(query, 'id') || null;
}

/** .NET's int.TryParse: optional white space around an optional sign and decimal digits, in Int32's range. */
const INT32 = /^[\t\n\v\f\r ]*([+-]?)0*(\d{1,10})[\t\n\v\f\r ]*$/;

/**
 * The version the client asked for, capped at ours; absent means 0. As ASP.NET Core answers it, a value
 * that is no integer, or one below version 0, is an error the negotiate response carries instead of a
 * connection.
 */
export function parseNegotiateVersion(raw: string | null): { version: 0 | 1 } | { error: string } {
  if (raw === null) return { version: 0 };
  const match = INT32.exec(raw);
  const value = match ? Number(`${match[1]}${match[2]}`) : NaN;
  if (!Number.isInteger(value) || value > 2 ** 31 - 1 || value < -(2 ** 31)) return { error: 'The client requested a non-integer protocol version.' };
  if (value < 0) return { error: `The client requested version '${value}', but the server does not support this version.` };
  return { version: value >= NEGOTIATE_VERSION ? 1 : 0 };
}

export interface PendingNegotiation {
  readonly connectionId: string;
  /** What the client presents as `id=`: the connectionToken (v1) or the connectionId (v0). */
  readonly key: string;
  readonly version: 0 | 1;
  readonly user: unknown;
  readonly createdAt: number;
  /** Stateful reconnect was agreed: the connection may come back with its token after a drop. */
  readonly statefulReconnect: boolean;
  /** The client's address key (address-slots.ts) it is counted under while it waits. */
  readonly address: string;
}

/** The client asks for stateful reconnect: `useStatefulReconnect=true` (as .NET's bool.TryParse reads it: any case, white space around). */
export function asksForStatefulReconnect(query: URLSearchParams): boolean {
  return queryParam(query, 'useStatefulReconnect')?.trim().toLowerCase() === 'true';
}

export function negotiateResponse(n: PendingNegotiation): Record<string, unknown> {
  const availableTransports = [{ transport: 'WebSockets', transferFormats: ['Text', 'Binary'] }];
  if (n.version === 0) return { negotiateVersion: 0, connectionId: n.connectionId, availableTransports };
  return {
    negotiateVersion: 1,
    connectionId: n.connectionId,
    connectionToken: n.key,
    availableTransports,
    ...(n.statefulReconnect ? { useStatefulReconnect: true } : {}),
  };
}

export type ClaimResult =
  | { readonly kind: 'claimed'; readonly negotiation: PendingNegotiation }
  | { readonly kind: 'not-found' }
  | { readonly kind: 'in-use' };

/**
 * Negotiations waiting for their WebSocket (bounded, expiring) and those a WebSocket took (until it
 * closes: a second socket on the same id is refused with 409, a later one with 404).
 */
export class NegotiationStore {
  // Insertion order is age order, so the first entry is the oldest.
  private readonly waiting = new Map<string, PendingNegotiation>();
  private readonly taken = new Set<string>();
  /** Waiting negotiations per address key. */
  private readonly addresses: AddressSlots;

  /** `maxPerAddress`: waiting negotiations one address key may hold (0: no limit). */
  constructor(
    private readonly ttlMs: number,
    private readonly maxWaiting: number,
    maxPerAddress = 0,
  ) {
    this.addresses = new AddressSlots(maxPerAddress);
  }

  /** A new waiting negotiation; undefined when `address` holds as many as one address may. */
  create(version: 0 | 1, user: unknown, now: number, address: string, statefulReconnect = false): PendingNegotiation | undefined {
    if (!this.addresses.take(address)) return undefined;
    const connectionId = newId();
    const key = version === 1 ? newId() : connectionId;
    const negotiation: PendingNegotiation = { connectionId, key, version, user, createdAt: now, statefulReconnect, address };
    if (this.waiting.size >= this.maxWaiting) {
      const oldest = this.waiting.values().next();
      if (!oldest.done) this.forget(oldest.value);
    }
    this.waiting.set(negotiation.key, negotiation);
    return negotiation;
  }

  /** Takes the negotiation for a WebSocket; an expired one counts as unknown. */
  claim(key: string, now: number): ClaimResult {
    if (this.taken.has(key)) return { kind: 'in-use' };
    const n = this.waiting.get(key);
    if (!n || now - n.createdAt >= this.ttlMs) return { kind: 'not-found' };
    this.forget(n);
    this.taken.add(key);
    return { kind: 'claimed', negotiation: n };
  }

  /** A negotiation waiting (not expired) or taken under `key`. */
  has(key: string, now: number): boolean {
    const n = this.waiting.get(key);
    return this.taken.has(key) || (n !== undefined && now - n.createdAt < this.ttlMs);
  }

  /** Forgets a taken negotiation: its socket closed or its upgrade failed. */
  release(key: string): void {
    this.taken.delete(key);
  }

  /** Removes waiting negotiations older than the TTL; returns how many. */
  expire(now: number): number {
    let removed = 0;
    for (const n of this.waiting.values()) {
      // Age order: the first young one ends the scan.
      if (now - n.createdAt < this.ttlMs) break;
      this.forget(n);
      removed++;
    }
    return removed;
  }

  waitingCount(): number {
    return this.waiting.size;
  }

  clearWaiting(): void {
    for (const n of [...this.waiting.values()]) this.forget(n);
  }

  private forget(n: PendingNegotiation): void {
    this.waiting.delete(n.key);
    this.addresses.release(n.address);
  }
}

/** The bearer token: `access_token` query parameter (browsers) or `Authorization: Bearer` header. */
export function bearerToken(authorization: string, accessToken: string | null): string | undefined {
  return bearerCredential(authorization) ?? (accessToken ? accessToken : undefined);
}
