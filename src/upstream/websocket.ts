// The `ws` WebSocket client, loaded by the first upstream connection or voice health check instead of at
// start: `ws` brings node:http, https, tls and zlib with it, which a hub whose devices are registered but
// silent never uses. Once loaded it stays (a second import is the same module). And the options of every
// connection we open to VoiceService.ServerUrl.
import type { IncomingMessage } from 'node:http';
import type WebSocket from 'ws';
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
export function upstreamClientOptions(authorization: string | undefined, ca: WebSocket.ClientOptions['ca'] | undefined, maxMessageBytes = UPSTREAM_MAX_MESSAGE_BYTES): WebSocket.ClientOptions {
  return {
    headers: authorization ? { Authorization: authorization } : {},
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
export function upstreamTarget(url: string, apiKey: string): { address: string; authorization: string | undefined } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    // The client names the bad URL in its own error.
    return { address: url, authorization: apiKey ? `Bearer ${apiKey}` : undefined };
  }
  if (!u.username && !u.password) return { address: url, authorization: apiKey ? `Bearer ${apiKey}` : undefined };
  const basic = Buffer.from(`${percentDecoded(u.username)}:${percentDecoded(u.password)}`).toString('base64');
  u.username = '';
  u.password = '';
  return { address: u.href, authorization: apiKey ? `Bearer ${apiKey}` : `Basic ${basic}` };
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
