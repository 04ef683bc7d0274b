// Token verification as every transport needs it (HTTP bearer tokens, the hub's connection token and
// JoinSession): signature, algorithm and expiry by the TokenService, then revocation, which depends on
// the device's current token generation and so is asked of whoever keeps the devices.
import { InvalidTokenError, type Principal, type TokenService } from './tokens.js';

export const TOKEN_REVOKED = 'The token has been revoked.';

/** Resolves with the token's principal; rejects with InvalidTokenError and the reason. */
export type VerifyToken = (token: string) => Promise<Principal>;

export function tokenVerifier(tokens: TokenService, isTokenCurrent: (principal: Principal) => boolean): VerifyToken {
  return async (token) => {
    const principal = await tokens.verify(token);
    if (!isTokenCurrent(principal)) throw new InvalidTokenError(TOKEN_REVOKED);
    return principal;
  };
}
