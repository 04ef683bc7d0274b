// Tokens for tests, signed with the key of a service's data dir (as `voice-hub token admin` does).
import { loadSigningKey } from '../../src/auth/signing-key.js';
import { TokenService } from '../../src/auth/tokens.js';
import type { TestService } from './service.js';
import { call } from './http.js';

export function tokenServiceFor(svc: TestService, now?: () => number): TokenService {
  return new TokenService(loadSigningKey(svc.loaded.config.Auth.SigningKey, svc.dataDir), now);
}

export async function adminToken(svc: TestService): Promise<string> {
  return (await tokenServiceFor(svc).issueAdmin(3_600_000)).token;
}

let counter = 0;
/** Registers a device through the API and returns its id and token. */
export async function registerDevice(svc: TestService, overrides: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<{ id: string; token: string; body: any }> {
  const id = (overrides.deviceId as string | undefined) ?? `dev-${process.pid}-${++counter}`;
  const res = await call(svc.url, 'POST', '/api/device/register', {
    body: { deviceId: id, deviceName: `Kitchen ${id}`, deviceType: 'speaker', capabilities: ['audio', 'wake-word'], location: 'kitchen', ...overrides },
    headers,
  });
  if (res.status !== 200) throw new Error(`register ${id}: ${res.status} ${res.text}`);
  return { id, token: res.json.deviceToken, body: res.json };
}
