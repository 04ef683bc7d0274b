// The `ws` WebSocket client, loaded by the first upstream connection or voice health check instead of at
// start: `ws` brings node:http, https, tls and zlib with it, which a hub whose devices are registered but
// silent never uses. Once loaded it stays (a second import is the same module). And the options of every
// connection we open to VoiceService.ServerUrl.
import type WebSocket from 'ws';

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
export function upstreamClientOptions(apiKey: string, ca: WebSocket.ClientOptions['ca'] | undefined, maxMessageBytes = UPSTREAM_MAX_MESSAGE_BYTES): WebSocket.ClientOptions {
  return {
    headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {},
    ...(ca ? { ca } : {}),
    maxPayload: maxMessageBytes,
    perMessageDeflate: false,
    followRedirects: false,
  };
}
