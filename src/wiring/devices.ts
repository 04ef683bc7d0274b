// The domain over the store: tokens, the runtime configuration categories, the device registry and the
// one token check (signature, expiry, then revocation) every transport uses.
import { loadSigningKey } from '../auth/signing-key.js';
import { TokenService } from '../auth/tokens.js';
import { tokenVerifier, type VerifyToken } from '../auth/verify.js';
import type { LoadedConfig } from '../config/types.js';
import { DeviceRegistry } from '../devices/registry.js';
import { acceptsStored } from '../api/routes/config.js';
import { ConfigCategories } from '../settings/categories.js';
import type { Store } from '../store/types.js';

export interface Devices {
  readonly categories: ConfigCategories;
  readonly registry: DeviceRegistry;
  readonly verifyToken: VerifyToken;
  /** The signing key file made at this start, if one was (none was there). */
  readonly newSigningKey?: string;
  /** Temporary files of a key's creation a crash interrupted, removed now. */
  readonly removedKeyLeftovers: readonly string[];
}

export function createDevices(loaded: LoadedConfig, store: Store): Devices {
  const { config } = loaded;
  let newSigningKey: string | undefined;
  const removedKeyLeftovers: string[] = [];
  const tokens = new TokenService(loadSigningKey(config.Auth.SigningKey, config.Storage.DataDir, {
    created: (file) => (newSigningKey = file),
    removed: (name) => removedKeyLeftovers.push(name),
  }));
  const categories = new ConfigCategories(loaded, store.settings, acceptsStored);
  const registry = new DeviceRegistry({ repo: store.devices, tokens, settings: () => categories.device() });
  const verifyToken = tokenVerifier(tokens, (p) => registry.isTokenCurrent(p));
  return { categories, registry, verifyToken, newSigningKey, removedKeyLeftovers };
}
