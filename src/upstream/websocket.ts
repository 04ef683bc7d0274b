// The `ws` WebSocket client, loaded by the first upstream connection or voice health check instead of at
// start: `ws` brings node:http, https, tls and zlib with it, which a hub whose devices are registered but
// silent never uses. Once loaded it stays (a second import is the same module).
import type WebSocket from 'ws';

let loading: Promise<typeof WebSocket> | undefined;

export function loadWebSocket(): Promise<typeof WebSocket> {
  loading ??= import('ws').then((module) => module.default);
  return loading;
}
