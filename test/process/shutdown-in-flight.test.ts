// Requests running when SIGTERM arrives are answered before the process exits. The shutdown used to end
// sessions, close the hub and flush the store, then exit at once: a registration whose record the flush
// wrote lost its answer (the socket closed under it), and with it the only copy of the device token; the
// client's retry got 409. Here 40 registrations are in flight on warm keep-alive connections when the
// bundle gets SIGTERM; every one must be answered, and what was answered 200 must be what is stored.
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, it } from 'node:test';
import { runBundle, spawnService } from '../support/service.js';
import { sleep } from '../support/wait.js';
import { tmpDir } from '../support/tmp.js';

const agent = new http.Agent({ keepAlive: true, maxSockets: 40 });

/** One request; its status, or the error code of a connection that ended without an answer. */
function request(url: string, method: string, path: string, body?: unknown, token?: string): Promise<{ status: number | string; json?: any }> {
  return new Promise((resolve) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(`${url}${path}`, {
      method,
      agent,
      headers: { ...(text ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } : {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    }, (res) => {
      let data = '';
      res.on('data', (d) => (data += d));
      res.on('end', () => resolve({ status: res.statusCode!, json: data ? JSON.parse(data) : undefined }));
      res.on('error', (e: NodeJS.ErrnoException) => resolve({ status: e.code ?? e.message }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ status: e.code ?? e.message }));
    req.end(text);
  });
}

const register = (url: string, id: string) => request(url, 'POST', '/api/device/register', { deviceId: id, deviceName: id, deviceType: 'speaker' });

describe('SIGTERM with requests in flight', () => {
  for (const delayMs of [0, 2, 5]) {
    it(`answers every registration running ${delayMs} ms after they were sent, and the 200s are what is stored`, async () => {
      const dataDir = tmpDir();
      const args = ['--data-dir', dataDir, '--DeviceManagement.MaxDevices', '1000', '--Mqtt.BrokerAddress', ''];
      const svc = await spawnService(args);
      // Warm connections: the requests below go out at once, on connections the service already holds.
      const warm = await Promise.all(Array.from({ length: 40 }, (_, i) => register(svc.url, `warm-${i}`)));
      assert.deepEqual([...new Set(warm.map((r) => r.status))], [200]);
      const running = Array.from({ length: 40 }, (_, i) => register(svc.url, `inflight-${i}`));
      await sleep(delayMs);
      svc.proc.kill('SIGTERM');
      const answers = await Promise.all(running);
      assert.equal(await svc.exited, 0, svc.output());
      agent.destroy();

      const unanswered = answers.filter((a) => typeof a.status !== 'number');
      assert.deepEqual(unanswered, [], 'every request running at SIGTERM is answered');

      const again = await spawnService(args);
      const token = (await runBundle(['token', 'admin', '--data-dir', dataDir])).stdout.trim();
      const list = await request(again.url, 'GET', '/api/device/list', undefined, token);
      again.proc.kill('SIGTERM');
      await again.exited;
      const stored = new Set((list.json.devices as { id: string }[]).map((d) => d.id));
      answers.forEach((a, i) => {
        const id = `inflight-${i}`;
        assert.equal(stored.has(id), a.status === 200, `${id}: answered ${a.status}, ${stored.has(id) ? '' : 'not '}stored`);
      });
    });
  }
});
