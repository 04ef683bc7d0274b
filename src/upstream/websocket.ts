// The `ws` WebSocket client, loaded by the first upstream connection or voice health check instead of at
// start: `ws` brings node:http, https, tls and zlib with it, which a hub whose devices are registered but
// silent never uses. Once loaded it stays (a second import is the same module). And the options of every
// connection we open to VoiceService.ServerUrl.
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import net from 'node:net';
import type WebSocket from 'ws';
import { splitZone, zonedAddress } from '../zoned-url.js';
import { percentDecoded, publicServerUrl } from './public-url.js';

let loading: Promise<typeof WebSocket> | undefined;

export function loadWebSocket(): Promise<typeof WebSocket> {
  loading ??= import('ws').then((module) => module.default);
  return loading;
}

/** Largest message taken from the voice server: a turn's audio is a few KB per frame. */
export const UPSTREAM_MAX_MESSAGE_BYTES = 1024 * 1024;

/**
 * Options of a connection to the voice server (a session's link, the health probe). What the far end
 * can make us hold is bounded: ws' own defaults accept 100 MiB messages and offer permessage-deflate, so
 * a server (or whatever answers at that address) could make a probe, which expects nothing, buffer
 * 100 MiB from a few hundred KB of compressed frames. Redirects are not followed: the key goes where
 * the configuration says, nowhere else.
 */
export function upstreamClientOptions(
  authorization: string | undefined,
  ca: WebSocket.ClientOptions['ca'] | undefined,
  maxMessageBytes = UPSTREAM_MAX_MESSAGE_BYTES,
  zoned?: ZonedTarget,
): WebSocket.ClientOptions {
  return {
    headers: authorization ? { Authorization: authorization } : {},
    ...(zoned === undefined ? {} : { createConnection: zonedConnection(zoned) }),
    ...(ca ? { ca } : {}),
    maxPayload: maxMessageBytes,
    perMessageDeflate: false,
    followRedirects: false,
  };
}

/**
 * Where to connect for VoiceService.ServerUrl, and the one Authorization it sends: `Bearer <ApiKey>` when a
 * key is set, else Basic credentials from the URL's user info. The user info is taken out of the address
 * and decoded first: `ws` would send it as written, percent-escapes and all (RFC 7617 credentials are the
 * decoded text, so a password holding `@` or `:` never matched), and beside our Bearer header as a second one.
 */
/** The zone of a link-local server's address (`eth0` of `[fe80::1%25eth0]`), and whether it is `wss://`. */
export interface ZonedTarget {
  readonly zone: string;
  readonly secure: boolean;
}

export function upstreamTarget(url: string, apiKey: string): { address: string; authorization: string | undefined; zoned: ZonedTarget | undefined } {
  // A link-local server's zone (`ws://[fe80::1%25eth0]:5050/voice`), which `ws`' URL parser refuses, is
  // taken out here and dialled by upstreamClientOptions (the Host header carries none).
  const { text, zone } = splitZone(url);
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    // The client names the bad URL in its own error.
    return { address: url, authorization: apiKey ? `Bearer ${apiKey}` : undefined, zoned: undefined };
  }
  const zoned = zone === undefined ? undefined : { zone, secure: u.protocol === 'wss:' };
  if (!u.username && !u.password) return { address: text, authorization: apiKey ? `Bearer ${apiKey}` : undefined, zoned };
  const basic = Buffer.from(`${percentDecoded(u.username)}:${percentDecoded(u.password)}`).toString('base64');
  u.username = '';
  u.password = '';
  return { address: u.href, authorization: apiKey ? `Bearer ${apiKey}` : `Basic ${basic}`, zoned };
}

/**
 * `ws`' createConnection for an address with a zone: it dials `fe80::1%eth0` where `ws` would dial
 * `fe80::1`, which names no interface. Over TLS no name goes in SNI (an address is never sent there), and
 * the certificate is checked against the address without its zone, as it would be named in one.
 */
function zonedConnection({ zone, secure }: ZonedTarget): NonNullable<WebSocket.ClientOptions['createConnection']> {
  return (given) => {
    // What `ws` hands over: its request options, `host` the address without brackets or zone.
    const options = given as net.TcpNetConnectOpts & { path?: string };
    const host = options.host ?? '';
    const dialled = zonedAddress(host, zone);
    // `path` is the request's, not a socket path (ws clears it the same way).
    if (!secure) return net.connect({ ...options, host: dialled, path: undefined } as net.TcpNetConnectOpts);
    // Required here, not imported: node:tls is loaded by `ws` (by then loaded), not at start.
    const tls = createRequire(import.meta.url)('node:tls') as typeof import('node:tls');
    return tls.connect({
      ...(options as import('node:tls').ConnectionOptions),
      host: dialled,
      path: undefined,
      servername: '',
      checkServerIdentity: (_name, cert) => tls.checkServerIdentity(host, cert),
    });
  };
}

/**
 * Why the server did not take the upgrade, in `ws`' words, and for a redirect where it points: redirects
 * are not followed (above), and "Unexpected server response: 301" alone left an operator to find out that
 * the server only wanted `/voice/` for `/voice`. The target is shown as /health shows the configured
 * one (publicServerUrl): a redirect may carry a token in its query.
 */
export function refusedUpgradeText(response: Pick<IncomingMessage, 'statusCode' | 'headers'>, address: string): string {
  const status = response.statusCode ?? 0;
  const text = `Unexpected server response: ${status}`;
  const { location } = response.headers;
  if (status < 300 || status > 399 || !location) return text;
  let target: string;
  try {
    // Relative to the address asked for, as a client following it would read it.
    target = publicServerUrl(new URL(location, address).href);
  } catch {
    target = '(invalid URL)';
  }
  return `${text} (a redirect to ${target}, not followed: VoiceService.ServerUrl must be the WebSocket address itself)`;
}
