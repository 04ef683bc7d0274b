// Turns parsed command-line options into configuration flags: any `--Section.Key value` in dot form,
// plus the short flags (`--port`, `--data-dir`, ...) mapped to their keys.
import { SHORT_FLAGS } from '../config/load.js';

export const CONFIG_OPTIONS = {
  config: { type: 'string', describe: 'configuration file (default: config/appsettings.json beside the program, if present)' },
  port: { type: 'number', describe: 'Server.Port: HTTP port (default 5000)' },
  host: { type: 'string', describe: 'Server.Host: address to listen on (default 0.0.0.0)' },
  'data-dir': { type: 'string', describe: 'Storage.DataDir: database and signing key (default ./data)' },
  'log-level': { type: 'string', describe: 'Logging.LogLevel.Default: Trace, Debug, Information, Warning, Error, Critical, None' },
  'voice-server-url': { type: 'string', describe: 'VoiceService.ServerUrl: upstream voice server (ws:// or wss://)' },
  'https-port': { type: 'number', describe: 'Server.HttpsPort: HTTPS port, when a certificate is set (default 5001)' },
  cert: { type: 'string', describe: 'Server.Certificate.Path: PEM certificate; turns HTTPS on' },
  key: { type: 'string', describe: 'Server.Certificate.KeyPath: PEM private key of the certificate' },
} as const;

export function configFlags(argv: Record<string, unknown>): Record<string, unknown> {
  const flags: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(argv)) {
    if (value === undefined) continue;
    const mapped = (SHORT_FLAGS as Record<string, string>)[name];
    if (mapped) flags[mapped] = value;
    else if (name.includes('.') && /^[A-Za-z]/.test(name)) flags[name] = value;
  }
  return flags;
}
