// Set-up through the service's real HTTP API: registering devices, minting an admin token with the
// CLI, starting voice sessions. Bounded concurrency so set-up does not distort what is measured next.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { BUNDLE } from './proc.js';

const run = promisify(execFile);

export interface Device {
  id: string;
  token: string;
}

export interface Session extends Device {
  sessionId: string;
}

async function json<T>(res: Response, what: string): Promise<T> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

export async function registerDevice(url: string, id: string): Promise<Device> {
  const res = await fetch(`${url}/api/device/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ deviceId: id, deviceName: `Bench ${id}`, deviceType: 'speaker', capabilities: ['audio'], location: 'bench' }),
    signal: AbortSignal.timeout(15_000),
  });
  const grant = await json<{ deviceToken: string }>(res, `register ${id}`);
  return { id, token: grant.deviceToken };
}

export async function startSession(url: string, device: Device): Promise<Session> {
  const res = await fetch(`${url}/api/voice/start`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${device.token}` },
    body: JSON.stringify({ deviceId: device.id, userId: 'bench', sessionConfig: { audioFormat: 'opus', sampleRate: 16000, channels: 1 } }),
    signal: AbortSignal.timeout(15_000),
  });
  const started = await json<{ sessionId: string }>(res, `start session for ${device.id}`);
  return { ...device, sessionId: started.sessionId };
}

/** Runs `fn` over `items` with at most `limit` at a time. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export function registerDevices(url: string, count: number, prefix: string): Promise<Device[]> {
  return mapLimit(Array.from({ length: count }, (_, i) => `${prefix}-${i}`), 8, (id) => registerDevice(url, id));
}

/** Registers `count` devices and starts one session for each. */
export async function startSessions(url: string, count: number, prefix: string): Promise<Session[]> {
  const devices = await registerDevices(url, count, prefix);
  return mapLimit(devices, 8, (d) => startSession(url, d));
}

/** An admin token minted by the service's own CLI with the data dir's signing key. */
export async function adminToken(dataDir: string): Promise<string> {
  const { stdout } = await run(process.execPath, [BUNDLE, 'token', 'admin', '--data-dir', dataDir], { timeout: 30_000 });
  return stdout.trim();
}

/** Polls `GET /health` until it answers 200; returns the milliseconds since `since`. */
export async function firstHealthy(url: string, since: number, timeoutMs = 20_000): Promise<number> {
  const deadline = since + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === 200) return performance.now() - since;
    } catch {
      // not listening yet
    }
    if (performance.now() > deadline) throw new Error(`no 200 from ${url}/health within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
