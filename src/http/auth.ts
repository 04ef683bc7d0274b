// Authentication at the HTTP edge: the X-API-Key check (a value from `ApiKeys`) and bearer
// tokens (docs/security.md, "Authentication"). Ownership of a particular device is checked by
// `requireDeviceAccess`, called by handlers that know which device a request is about.
import { timingSafeEqual } from 'node:crypto';
import { bearerCredential } from '../auth/bearer.js';
import { InvalidTokenError, type Principal } from '../auth/tokens.js';
import { TOKEN_REVOKED, type VerifyToken } from '../auth/verify.js';
import { DomainError } from '../errors.js';
import type { AuthRequirement } from './router.js';

export interface AuthDeps {
  apiKeys: readonly string[];
  /** The same verification (revocation included) as the hub's. */
  verifyToken: VerifyToken;
  /**
   * Revocation alone (verifyToken's last step), asked again just before the handler runs: the body was
   * read after the token was verified, and a device deleted meanwhile (perhaps registered again under
   * its id) must not have its old token's request run against it.
   */
  isTokenCurrent: (principal: Principal) => boolean;
  requireDeviceTokenForVoice: boolean;
}

/** A missing or unknown key is 401 with a plain-text body, as the interface requires. */
export const INVALID_API_KEY = 'Invalid API Key';

export function apiKeyAccepted(header: string | undefined, keys: readonly string[]): boolean {
  if (keys.length === 0) return true;
  if (!header) return false;
  const given = Buffer.from(header);
  // Compare against every key in constant time so timing does not reveal a key's prefix.
  let ok = false;
  for (const key of keys) {
    const k = Buffer.from(key);
    if (k.length === given.length && timingSafeEqual(k, given)) ok = true;
  }
  return ok;
}

/** The presented token; a header that presents none (another scheme, `Bearer` alone) is refused here. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const token = bearerCredential(header);
  if (token === undefined) throw new DomainError('unauthenticated', 'The Authorization header must be "Bearer <token>".');
  return token;
}

/**
 * The `WWW-Authenticate` challenge of a 401 for a bearer token (RFC 9110 section 15.5.2: every 401 has
 * one). For a token that was presented and refused, RFC 6750 section 3.1 asks for `error="invalid_token"`,
 * and ASP.NET Core's JwtBearer handler writes it with the reason as `error_description`; a request
 * without a token (or with another scheme) gets the bare `Bearer`, which tells the client to get one.
 */
export function bearerChallenge(refusal: unknown): string {
  if (!(refusal instanceof InvalidTokenError)) return 'Bearer';
  // A quoted-string (RFC 9110 section 5.6.4): the reasons are ours, but a quote must not end it early.
  const description = refusal.message.replace(/["\\]/g, (c) => `\\${c}`);
  return `Bearer error="invalid_token", error_description="${description}"`;
}

/** Whether a route checks a bearer token on this server: 'voice' routes only with `VoiceService.RequireDeviceToken`. */
export function bearerChecked(need: AuthRequirement, requireDeviceTokenForVoice: boolean): boolean {
  return need.bearer === 'any' || need.bearer === 'admin' || (need.bearer === 'voice' && requireDeviceTokenForVoice);
}

/** The request's principal, at once when its token was verified before (VerifyToken); throws or rejects with the refusal. */
export function authenticate(
  headers: Readonly<Record<string, string>>,
  need: AuthRequirement,
  deps: AuthDeps,
): Principal | undefined | Promise<Principal | undefined> {
  if (!bearerChecked(need, deps.requireDeviceTokenForVoice)) return undefined;
  const token = bearerToken(headers.authorization);
  if (!token) throw new DomainError('unauthenticated', 'A bearer token is required.');
  const principal = deps.verifyToken(token);
  return principal instanceof Promise ? principal.then((p) => withRole(need, p)) : withRole(need, principal);
}

function withRole(need: AuthRequirement, principal: Principal): Principal {
  if (need.bearer === 'admin' && principal.role !== 'admin') throw new DomainError('forbidden', 'This operation needs an admin token.');
  return principal;
}

/** Throws as verifyToken does for a token revoked since it was verified. */
export function requireStillCurrent(principal: Principal | undefined, deps: AuthDeps): void {
  if (principal && !deps.isTokenCurrent(principal)) throw new InvalidTokenError(TOKEN_REVOKED);
}

/** Admin, or the device itself. `undefined` means the route's auth is switched off by configuration. */
export function requireDeviceAccess(principal: Principal | undefined, deviceId: string): void {
  if (!principal || principal.role === 'admin') return;
  if (principal.sub !== deviceId) throw new DomainError('forbidden', 'The token belongs to another device.');
}
