// The voice-service health check: a real WebSocket connection test to VoiceService.ServerUrl (open,
// then close 1000). Probes are shared and briefly reused so that a burst of /health requests is one
// upstream connection, not a burst of them.
import type WebSocket from 'ws';
import { loadWebSocket, refusedUpgradeText, upstreamClientOptions, upstreamTarget } from '../upstream/websocket.js';
import { watchFragments } from '../upstream/fragment-limit.js';
import { taggedCheck, type CheckResult, type HealthCheck } from './checks.js';
import { publicServerUrl } from '../upstream/public-url.js';
import { connectionErrorText, errorText } from '../errors.js';
import { monotonicMs } from '../monotonic-clock.js';

export interface VoiceCheckOptions {
  serverUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`, as the sessions do; empty sends none. */
  apiKey: string;
  /** Read at every check: voice can be switched off at run time through the `voice` category. */
  enabled: () => boolean;
  timeoutMs: number;
  /** How long a result is reused. Default 2000 ms. */
  cacheMs?: number;
  /** Extra trusted CA certificates (PEM) for a `wss://` server with a private CA. */
  ca?: string | Buffer | Array<string | Buffer>;
}

const TAGS = ['voice', 'upstream'];

export function createVoiceServiceCheck(options: VoiceCheckOptions): HealthCheck {
  const cacheMs = options.cacheMs ?? 2000;
  const shown = publicServerUrl(options.serverUrl);
  let inflight: Promise<CheckResult> | undefined;
  let last: { result: CheckResult; at: number } | undefined;

  return taggedCheck(TAGS, async () => {
    if (!options.enabled()) {
      return { status: 'Healthy', description: 'voice features disabled', data: { serverUrl: shown }, tags: TAGS };
    }
    if (last && monotonicMs() - last.at < cacheMs) return copy(last.result);
    inflight ??= probe(options, shown).then((result) => {
      last = { result, at: monotonicMs() };
      inflight = undefined;
      return result;
    });
    return copy(await inflight);
  });
}

/** Callers get their own object: one caller's changes must not show in another's report. */
const copy = (r: CheckResult): CheckResult => ({ ...r, data: { ...r.data }, tags: [...(r.tags ?? [])] });

async function probe(options: VoiceCheckOptions, shown: string): Promise<CheckResult> {
  // Loaded first, so that elapsedMs is the connection's own time, not the first probe's module load.
  const WebSocketClient = await loadWebSocket();
  const started = monotonicMs();
  const data = (): Record<string, unknown> => ({ serverUrl: shown, elapsedMs: Math.round(monotonicMs() - started) });
  const unhealthy = (text: string): CheckResult => ({ status: 'Unhealthy', description: text, exception: text, data: data(), tags: TAGS });

  return new Promise<CheckResult>((resolve) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (result: CheckResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    let ws: WebSocket;
    let address: string;
    try {
      const target = upstreamTarget(options.serverUrl, options.apiKey);
      address = target.address;
      ws = new WebSocketClient(address, upstreamClientOptions(target.authorization, options.ca, undefined, target.zoned));
    } catch (e) {
      finish(unhealthy(connectionErrorText(e))); // an invalid URL throws synchronously
      return;
    }
    timer = setTimeout(() => {
      finish(unhealthy(`no WebSocket connection to ${shown} within ${options.timeoutMs} ms`));
      ws.terminate();
    }, options.timeoutMs);
    ws.on('open', () => {
      // ws goes on reading until the server answers the close, for up to 2 s, and maxPayload bounds a
      // message's bytes, not its fragments: a server that sent 1 MiB in one-byte fragments made one probe
      // hold a million Buffers (115 MB of RSS from 3 MB of traffic), every time /health asked. The probe
      // wants nothing from the server now, so a message in more fragments than the link takes ends it.
      // A ws without the receiver it reads fails every session's link at its connect, so it fails this too.
      try {
        watchFragments(ws, () => ws.terminate());
      } catch (e) {
        finish(unhealthy(errorText(e)));
        ws.terminate();
        return;
      }
      finish({ status: 'Healthy', description: `WebSocket connection to ${shown} opened`, data: data(), tags: TAGS });
      ws.close(1000);
      // A server that never answers the close frame must not keep the socket for ws' 30 s close timeout.
      setTimeout(() => ws.terminate(), 2000).unref();
    });
    // After the verdict, errors (e.g. from terminate) are expected and ignored.
    ws.on('error', (e) => finish(unhealthy(connectionErrorText(e))));
    // Listened to, ws leaves the refused handshake to us.
    ws.once('unexpected-response', (_request, response) => {
      finish(unhealthy(refusedUpgradeText(response, address)));
      ws.terminate();
    });
  });
}
