// Device and admin tokens: HS256 JWTs (docs/security.md, "Authentication"). Only HS256 is accepted, so
// `alg: none` and algorithm-confusion tokens are refused by construction.
import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import { DomainError } from '../errors.js';

export type Role = 'device' | 'admin';

export interface Principal {
  readonly role: Role;
  /** deviceId for device tokens, "admin" for admin tokens. */
  readonly sub: string;
  /** Token generation of the device at issue time (device tokens only). */
  readonly gen: number;
  /** Expiry, seconds since the epoch. */
  readonly exp: number;
}

/**
 * A token that was presented and refused (forged, malformed, expired or revoked), as opposed to no token
 * at all: the HTTP challenge tells a client which of the two it met (RFC 6750 section 3.1).
 */
export class InvalidTokenError extends DomainError {
  constructor(reason: string) {
    super('unauthenticated', reason);
  }
}

export interface IssuedToken {
  token: string;
  expiresAt: Date;
}

/** Verified tokens remembered (LRU). Devices send the same token on every request and hub call. */
export const VERIFIED_TOKEN_CACHE_SIZE = 1024;

/**
 * JWS compact serialization (RFC 7515 section 7.1): three parts in base64url without padding (section 2),
 * the signature in its one canonical spelling (RFC 4648 section 3.5: the unused bits of its last
 * character zero). jose also reads the standard alphabet's `+` and `/`, a trailing `=` and any unused
 * bits, so each token had many spellings that all verified, each a token of its own to whatever keeps
 * or compares tokens (the verified-token cache took a place for each).
 */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

function isCompactJws(token: string): boolean {
  if (!COMPACT_JWS.test(token)) return false;
  const signature = token.slice(token.lastIndexOf('.') + 1);
  return Buffer.from(signature, 'base64url').toString('base64url') === signature;
}

export class TokenService {
  /**
   * Token string -> what it verified to. A token's signature and claims never change, so only its expiry
   * needs checking again; revocation is the caller's check on every use (it depends on the device, not
   * the token). Failures are not cached, so garbage cannot evict genuine entries faster than it costs.
   */
  private readonly verified = new Map<string, { readonly principal: Principal; used: number }>();
  /**
   * Counts uses: an entry's `used` is the count at its last use, so the least recently used is the lowest.
   * Stamped rather than moved to the Map's end, which took a delete and a set (two more hash lookups,
   * and the table's rehash as deleted slots pile up) on every request.
   */
  private uses = 0;

  constructor(
    private readonly key: Uint8Array,
    private readonly now: () => number = Date.now,
  ) {}

  issueDevice(deviceId: string, generation: number, ttlMs: number): Promise<IssuedToken> {
    return this.issue(deviceId, 'device', ttlMs, { gen: generation });
  }

  issueAdmin(ttlMs: number): Promise<IssuedToken> {
    return this.issue('admin', 'admin', ttlMs, {});
  }

  /** Verifies signature, algorithm and expiry; throws InvalidTokenError with the reason. */
  async verify(token: string): Promise<Principal> {
    const known = this.verifyKnown(token);
    if (known) return known;
    if (!isCompactJws(token)) throw new InvalidTokenError('The token is invalid.');
    const principal = await this.verifySignature(token);
    this.verified.set(token, { principal, used: ++this.uses });
    if (this.verified.size > VERIFIED_TOKEN_CACHE_SIZE) this.verified.delete(this.leastRecentlyUsed());
    return principal;
  }

  /**
   * verify()'s answer without a promise for a token verified before; undefined for any other, which only
   * verify() can judge. Throws InvalidTokenError when the token expired since.
   */
  verifyKnown(token: string): Principal | undefined {
    // Only a token that passed verify()'s syntax check is ever cached: a hit needs no second check
    // (the check's regular expression and Base64 round trip were 4 % of a status update's CPU).
    const known = this.verified.get(token);
    if (!known) return undefined;
    // jose's rule: expired once exp <= now in whole seconds.
    if (known.principal.exp <= Math.floor(this.now() / 1000)) {
      this.verified.delete(token);
      throw new InvalidTokenError('The token expired.');
    }
    known.used = ++this.uses;
    return known.principal;
  }

  /** The cached token used longest ago: a walk of the cache, made only when a new token is verified. */
  private leastRecentlyUsed(): string {
    let oldest = '';
    let oldestUse = Infinity;
    for (const [token, { used }] of this.verified) {
      if (used < oldestUse) {
        oldest = token;
        oldestUse = used;
      }
    }
    return oldest;
  }

  private async verifySignature(token: string): Promise<Principal> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        currentDate: new Date(this.now()),
      });
      const role = payload.role;
      if ((role !== 'device' && role !== 'admin') || typeof payload.sub !== 'string' || typeof payload.exp !== 'number') {
        throw new InvalidTokenError('The token is invalid.');
      }
      const gen = typeof payload.gen === 'number' ? payload.gen : 0;
      return { role, sub: payload.sub, gen, exp: payload.exp };
    } catch (e) {
      if (e instanceof InvalidTokenError) throw e;
      if (e instanceof joseErrors.JWTExpired) throw new InvalidTokenError('The token expired.');
      throw new InvalidTokenError('The token is invalid.');
    }
  }

  private async issue(sub: string, role: Role, ttlMs: number, extra: Record<string, unknown>): Promise<IssuedToken> {
    const nowMs = this.now();
    const iat = Math.floor(nowMs / 1000);
    const exp = Math.max(iat + 1, Math.floor((nowMs + ttlMs) / 1000));
    const token = await new SignJWT({ role, ...extra })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(sub)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .setJti(randomUUID())
      .sign(this.key);
    return { token, expiresAt: new Date(exp * 1000) };
  }
}
