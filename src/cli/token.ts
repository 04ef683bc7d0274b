// `voice-hub token admin`: mints an admin token with this installation's signing key.
import { loadSigningKey } from '../auth/signing-key.js';
import { TokenService } from '../auth/tokens.js';
import { parseTimeSpan } from '../config/timespan.js';
import type { LoadedConfig } from '../config/types.js';
import { CliExit } from './load.js';

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `30d`, `12h`, `90m`, `45s`, `2w`, or a .NET time span (`7.00:00:00`). */
export function parseTtl(text: string): number {
  const m = /^(\d+)([smhdw])$/.exec(text.trim());
  if (m) return Number(m[1]) * UNITS[m[2]!]!;
  try {
    return parseTimeSpan(text);
  } catch {
    throw new CliExit(2, `invalid --ttl '${text}': use e.g. 30d, 12h, 90m or a time span like 7.00:00:00`);
  }
}

export async function mintAdminToken(loaded: LoadedConfig, ttl: string): Promise<string> {
  const ms = parseTtl(ttl);
  if (ms <= 0) throw new CliExit(2, '--ttl must be positive');
  const key = loadSigningKey(loaded.config.Auth.SigningKey, loaded.config.Storage.DataDir);
  const { token } = await new TokenService(key).issueAdmin(ms);
  return token;
}
