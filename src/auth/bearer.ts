// The token an `Authorization` header presents, read alike by the HTTP API and the hub: what follows the
// `Bearer ` scheme, trimmed, as ASP.NET Core's JwtBearer handler takes it. Whatever that text is, it was
// presented as a token: verification refuses it (401 with `error="invalid_token"`), never a parser that
// read it as no token at all.

/** The credential after `Bearer ` (the scheme in any case); undefined without one, or for another scheme. */
export function bearerCredential(header: string | undefined): string | undefined {
  if (header === undefined || header.length < 7 || header.slice(0, 7).toLowerCase() !== 'bearer ') return undefined;
  const credential = header.slice(7).trim();
  return credential === '' ? undefined : credential;
}
