// The version build.mjs writes into the bundle (package.json's); `dev` when run from source.
declare const VOICE_HUB_VERSION: string | undefined;

export function builtVersion(): string {
  return typeof VOICE_HUB_VERSION === 'string' ? VOICE_HUB_VERSION : 'dev';
}
