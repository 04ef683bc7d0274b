// Where devices reach the service: one uWS app for plain HTTP and, with a certificate, one for HTTPS beside
// it, both carrying the same routes and hub; the host check and CORS policy they share; and the ports they
// listen on, known only once listening (a configured port 0 picks a free one).
import os from 'node:os';
import { ConfigError } from '../config/load.js';
import type { AppConfig } from '../config/types.js';
import { HEALTH_PATH } from '../api/routes/health.js';
import { requestGate, type RequestGate } from '../http/gate.js';
import { urlHost } from '../url-host.js';
import { corsPolicy, type CorsPolicy } from '../http/cors.js';
import { listen, type Listening } from '../http/server.js';
import { ACCEPTED_RSA_BITS, type TlsFiles } from '../http/tls.js';
import type { Uws } from '../http/uws-native.js';
import type { HubListener } from '../hub/index.js';
import type { Logger } from '../log/logger.js';

export interface Ports {
  plain: number;
  https: number | undefined;
}

export interface Endpoints {
  /** The plain app first, then the HTTPS one when configured. */
  readonly apps: HubListener[];
  /** Filled in by listenAll; read per request (redirects, websocketUrl). */
  readonly ports: Ports;
  readonly gate: RequestGate;
  /** The one CORS policy of the API and the hub (`Cors:AllowedOrigins`). */
  readonly cors: CorsPolicy;
  /** What websocketUrl names when a request has an empty Host: this machine and the port it came in on. */
  listeningAddress(secure: boolean): string;
}

export function createEndpoints(config: AppConfig, uws: Uws, tls: TlsFiles | undefined): Endpoints {
  const apps: HubListener[] = [{ app: uws.App(), secure: false }];
  if (tls) apps.push({ app: secureApp(uws, tls), secure: true });
  const ports: Ports = { plain: config.Server.Port, https: undefined };
  const serverName = ['0.0.0.0', '::'].includes(config.Server.Host) ? os.hostname() : config.Server.Host;
  const hostPart = urlHost(serverName);
  return {
    apps,
    ports,
    gate: requestGate({
      allowedHosts: config.AllowedHosts,
      httpsRedirectPort: config.Server.HttpsRedirect ? () => ports.https : undefined,
      fallbackHost: hostPart,
      neverRedirected: HEALTH_PATH,
    }),
    cors: corsPolicy(config.Cors.AllowedOrigins),
    listeningAddress: (secure) => `${hostPart}:${secure ? ports.https : ports.plain}`,
  };
}

/**
 * The HTTPS app. loadTlsFiles refuses what it knows uWS' TLS library cannot serve; anything else it
 * refuses still names the files and is a configuration problem (exit 78, not retried), not the bare
 * "App construction failed" of a failed start-up.
 */
function secureApp(uws: Uws, tls: TlsFiles): ReturnType<Uws['SSLApp']> {
  try {
    return uws.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile });
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new ConfigError([`Server.Certificate.Path: the HTTPS server cannot use the certificate ${tls.certFile} with the key ${tls.keyFile} (${why})`]);
  }
}

/** Listens on the configured ports (plain first), records the ports and returns the listeners to close. */
export async function listenAll(
  config: AppConfig,
  uws: Uws,
  endpoints: Endpoints,
  tls: TlsFiles | undefined,
  logger: Logger,
  opened: Listening[],
): Promise<void> {
  const plain = await listen(uws, endpoints.apps[0]!.app, config.Server.Host, config.Server.Port);
  opened.push(plain);
  endpoints.ports.plain = plain.port;
  if (tls) {
    const secure = await listen(uws, endpoints.apps[1]!.app, config.Server.Host, config.Server.HttpsPort);
    opened.push(secure);
    endpoints.ports.https = secure.port;
    logger.info(`listening on https://${urlHost(config.Server.Host)}:${secure.port} (certificate ${tls.subject}; ${tls.names}; valid to ${tls.validTo.toISOString()})`);
    if (tls.keyReadableByOthers !== undefined) {
      const mode = tls.keyReadableByOthers.toString(8).padStart(4, '0');
      logger.warn(`the HTTPS key ${tls.keyFile} is readable by every user of this machine (mode ${mode}): any of them can pose as this service; make it readable by the service only (chmod o-r)`);
    }
    if (tls.weakRsaBits !== undefined) {
      logger.warn(`the HTTPS key ${tls.keyFile} is a ${tls.weakRsaBits}-bit RSA key: clients at OpenSSL's default security level (curl, Python and Node on Debian and Raspberry Pi OS) refuse keys under ${ACCEPTED_RSA_BITS} bits; make one of ${ACCEPTED_RSA_BITS}`);
    }
    if (tls.weakSignature !== undefined) {
      logger.warn(`the HTTPS certificate ${tls.certFile}: ${tls.weakSignature}, which TLS clients (curl, Python and Node on Debian and Raspberry Pi OS) refuse ("CA signature digest algorithm too weak"); have it signed with SHA-256`);
    }
    // Said with the clock's reading, as below: a bad time source may have set it ahead.
    if (tls.validTo.getTime() < Date.now()) {
      logger.warn(`the HTTPS certificate ${tls.certFile} expired on ${tls.validTo.toISOString()}: devices will refuse it (or this machine's clock, ${new Date().toISOString()}, is wrong)`);
    }
    // A Pi without a real-time clock starts in the past until it reaches a time server.
    if (tls.validFrom.getTime() > Date.now()) {
      logger.warn(`the HTTPS certificate ${tls.certFile} is valid only from ${tls.validFrom.toISOString()}: devices will refuse it until then (or this machine's clock, ${new Date().toISOString()}, is wrong)`);
    }
  }
  logger.info(`listening on http://${urlHost(config.Server.Host)}:${plain.port}`);
}
