// Token verification as every transport needs it (HTTP bearer tokens, the hub's connection token and
// JoinSession): signature, algorithm and expiry by the TokenService, then revocation, which depends on
// the device's current token generation and so is asked of whoever keeps the devices.
import { InvalidTokenError, type Principal, type TokenService } from './tokens.js';

export const TOKEN_REVOKED = 'The token has been revoked.';

/**
 * The token's principal: at once for a token verified before, else a promise of it. Refusals are always
 * a promise rejected with InvalidTokenError and the reason, never a throw.
 */
export type VerifyToken = (token: string) => Principal | Promise<Principal>;

export function tokenVerifier(tokens: TokenService, isTokenCurrent: (principal: Principal) => boolean): VerifyToken {
  const current = (principal: Principal): Principal => {
    if (!isTokenCurrent(principal)) throw new InvalidTokenError(TOKEN_REVOKED);
    return principal;
  };
  // A known token is answered without a promise: three promise hops were most of the token check's
  // cost in a status update (authenticate, this, TokenService.verify, each async).
  return (token) => {
    try {
      const known = tokens.verifyKnown(token);
      if (known) return current(known);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    return tokens.verify(token).then(current);
  };
}
