// A clean shutdown ends every session before the hub closes, so its members learn why the session ended
// (`SessionEnded`, reason `service shutdown`) and then get the Close that lets them reconnect. The hub
// used to be closed first: members got only the Close, and after the restart a rejoin learned that the
// session had stopped.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { WebSocketServer } from 'ws';
import { HubWire } from '../hardening/hub-wire.js';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { runBundle, spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { registerDevice } from '../support/tokens.js';
import { startSession, startVoiceRig } from '../support/voice.js';
import { waitUntil, withTimeout } from '../support/wait.js';

describe('shutdown', () => {
  for (const protocol of ['json', 'messagepack'] as const) {
    it(`${protocol}: members get SessionEnded (service shutdown), then a Close that allows reconnecting`, async () => {
      const { svc } = await startVoiceRig();
      const device = await registerDevice(svc, { deviceId: `shut-${protocol}` });
      const { sessionId } = await startSession(svc, device.id, device.token);
      const wire = await HubWire.connect(svc.url, protocol);
      await wire.join(sessionId, device.token);
      await svc.stop();
      await withTimeout(wire.closed, 10_000, 'the hub to close the connection');
      // What came after the join, but the join's own completion.
      const after = wire.messages.slice(wire.messages.findIndex((m) => m.target === 'SessionJoined') + 1).filter((m) => m.type !== 3);
      assert.deepEqual(after.map((m) => (m.type === 1 ? [m.target, m.arguments] : [m.type, m.allowReconnect])), [
        ['SessionEnded', [{ sessionId, reason: 'service shutdown' }]],
        [7, true],
      ]);
    });
  }
});

/** A voice server (echo) whose handshakes after the first wait until released: a second start stays connecting. */
async function upstreamHoldingSecond(): Promise<{ url: string; waiting: () => number; close: () => Promise<void> }> {
  const held: Array<() => void> = [];
  let handshakes = 0;
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    verifyClient: (_info, done) => {
      if (handshakes++ === 0) done(true);
      else held.push(() => done(true));
    },
  });
  wss.on('connection', (socket) => socket.on('message', () => undefined));
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/voice`,
    waiting: () => held.length,
    close: () => new Promise<void>((resolve) => {
      held.splice(0).forEach((go) => go());
      wss.close(() => resolve());
      for (const c of wss.clients) c.terminate();
    }),
  };
}

// A start refused changes nothing: one the drain refuses while it connects leaves the device's session
// to the shutdown. The old session used to be ended first ('replaced'), then the start was refused
// with 503: its members and the record said a new session had replaced it, and none had.
describe('a start refused by the shutdown while it connects', () => {
  it('is 503 "the service is shutting down", and the device\'s session ends "service shutdown", not "replaced"', async () => {
    const upstream = await upstreamHoldingSecond();
    after(() => upstream.close());
    const dataDir = tmpDir();
    const args = ['--data-dir', dataDir, '--Mqtt.BrokerAddress', '', '--VoiceService.ServerUrl', upstream.url];
    const svc = await spawnService(args);
    const registered = await call(svc.url, 'POST', '/api/device/register', { body: { deviceId: 'drained', deviceName: 'Drained', deviceType: 'speaker' } });
    assert.equal(registered.status, 200, registered.text);
    const token = registered.json.deviceToken as string;
    const first = await call(svc.url, 'POST', '/api/voice/start', { token, body: { deviceId: 'drained' } });
    assert.equal(first.status, 200, first.text);

    const second = call(svc.url, 'POST', '/api/voice/start', { token, body: { deviceId: 'drained' } });
    await waitUntil(() => upstream.waiting() === 1, 'the second start to be connecting upstream');
    svc.proc.kill('SIGTERM');
    assertProblem(answered(await second), 503, { detail: 'the service is shutting down' });
    assert.equal(await svc.exited, 0, svc.output());
    assert.match(svc.output(), new RegExp(`session ${first.json.sessionId} stopped: service shutdown`));
    assert.doesNotMatch(svc.output(), /stopped: replaced/);

    // The record says so too: stopping an ended session answers its final record.
    const again = await spawnService(args);
    const admin = (await runBundle(['token', 'admin', '--data-dir', dataDir])).stdout.trim();
    const record = await call(again.url, 'POST', '/api/voice/stop', { token: admin, body: { sessionId: first.json.sessionId } });
    again.proc.kill('SIGTERM');
    await again.exited;
    assert.equal(record.status, 200, record.text);
    assert.deepEqual([record.json.state, record.json.endReason], ['Stopped', 'service shutdown']);
  });
});
