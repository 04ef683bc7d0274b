// A session that was running when the service died (kill -9, power loss) is recorded as stopped at the
// next start. MQTT subscribers saw its `started` event; they must see its `ended` one too, or a home
// automation that follows sessions by their events keeps it running for good. The built bundle, killed
// for real, a real broker and the echo server.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { EchoServer } from '../../src/upstream/echo-server.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { spawnService, type TestService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { registerDevice } from '../support/tokens.js';
import { startEcho, startSession } from '../support/voice.js';
import { Subscriber } from './helpers.js';

describe('sessions a crash interrupted, on MQTT', () => {
  let broker: Mosquitto | undefined;
  let echo: EchoServer | undefined;
  let sub: Subscriber | undefined;
  after(async () => {
    await sub?.end();
    await echo?.close();
    await broker?.stop();
  });

  it('the next start publishes their `ended` event, with the reason it records', async () => {
    broker = await startMosquitto();
    echo = await startEcho();
    const dataDir = tmpDir();
    const args = ['--data-dir', dataDir, '--Mqtt.BrokerAddress', '127.0.0.1', '--Mqtt.Port', String(broker.port),
      '--VoiceService.ServerUrl', `ws://127.0.0.1:${echo.port}/voice`];
    sub = await Subscriber.connect(broker.port, ['voice-hub/sessions/+/event']);

    const first = await spawnService(args);
    const svc = { url: first.url } as TestService;
    const { id, token } = await registerDevice(svc);
    const { sessionId } = await startSession(svc, id, token);
    const topic = `voice-hub/sessions/${sessionId}/event`;
    await sub.waitFor((m) => m.topic === topic, 'the started event');
    first.proc.kill('SIGKILL');
    await first.exited;

    const second = await spawnService(args);
    const ended = await sub.waitFor((m) => m.topic === topic && m.payload.includes('"ended"'), 'the ended event after the restart');
    const event = JSON.parse(ended.payload) as Record<string, unknown>;
    assert.deepEqual({ ...event, timestamp: typeof event.timestamp }, { event: 'ended', sessionId, deviceId: id, timestamp: 'string', reason: 'service restarted' });
    assert.ok(new Date(String(event.timestamp)).getTime() > Date.now() - 60_000);
    assert.deepEqual(sub.on(topic).map((m) => (JSON.parse(m.payload) as { event: string }).event), ['started', 'ended']);
    second.proc.kill('SIGTERM');
    await second.exited;
  });
});
