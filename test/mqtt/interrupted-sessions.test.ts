// A session that was running when the service stopped is recorded as ended. MQTT subscribers saw its
// `started` event; they must see its `ended` one too, or a home automation that follows sessions by their
// events keeps it running for good: after a crash (kill -9, power loss) the next start records and
// publishes it; after a clean stop while the broker was away, the next start sends the event that stop
// kept. The built bundle, stopped for real, a real broker and the echo server.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { EchoServer } from '../../src/upstream/echo-server.js';
import { call } from '../support/http.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { spawnService, type SpawnedService, type TestService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { registerDevice } from '../support/tokens.js';
import { startEcho, startSession } from '../support/voice.js';
import { waitUntil } from '../support/wait.js';
import { Subscriber } from './helpers.js';

/** Whether the service's /health says it is connected to its broker. */
const brokerConnected = async (url: string): Promise<boolean> => (await call(url, 'GET', '/health')).json.entries.mqtt.status === 'Healthy';

describe('sessions a stop interrupted, on MQTT', () => {
  let broker: Mosquitto | undefined;
  let echo: EchoServer | undefined;
  const cleanup: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const c of cleanup) await c();
    await echo?.close();
    await broker?.stop();
  });

  /** A service on a new data dir with a session whose `started` event `sub` has seen. */
  const serviceWithSession = async (): Promise<{ args: string[]; first: SpawnedService; id: string; sessionId: string; topic: string; sub: Subscriber }> => {
    broker ??= await startMosquitto();
    echo ??= await startEcho();
    const args = ['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '127.0.0.1', '--Mqtt.Port', String(broker.port),
      '--VoiceService.ServerUrl', `ws://127.0.0.1:${echo.port}/voice`];
    const watcher = await Subscriber.connect(broker.port, ['voice-hub/sessions/+/event']);
    cleanup.push(() => watcher.end());
    const first = await spawnService(args);
    const svc = { url: first.url } as TestService;
    const { id, token } = await registerDevice(svc);
    const { sessionId } = await startSession(svc, id, token);
    const topic = `voice-hub/sessions/${sessionId}/event`;
    await watcher.waitFor((m) => m.topic === topic, 'the started event');
    return { args, first, id, sessionId, topic, sub: watcher };
  };

  /** The broker gone, a clean stop: it keeps the one `ended` event the broker did not get, and says so. */
  const stoppedWithBrokerAway = async (service: SpawnedService): Promise<void> => {
    await broker!.stop();
    await waitUntil(async () => !(await brokerConnected(service.url)), 'the service to see the broker gone');
    service.proc.kill('SIGTERM');
    assert.equal(await service.exited, 0);
    assert.match(service.output(), /the MQTT broker did not get 1 MQTT message\(s\) \(1 session event\(s\)\): kept in the database, sent after the next start/);
  };

  /** The broker back, a start: the kept `ended` event reaches a subscriber, and the start says it sent it. */
  const keptEventSentAfterRestart = async (args: string[], session: { id: string; sessionId: string; topic: string }): Promise<{ events: Subscriber; service: SpawnedService }> => {
    await broker!.restart();
    const events = await Subscriber.connect(broker!.port, ['voice-hub/sessions/+/event']);
    cleanup.push(() => events.end());
    const service = await spawnService(args);
    const ended = await events.waitFor((m) => m.topic === session.topic, 'the kept ended event after the restart');
    const event = JSON.parse(ended.payload) as Record<string, unknown>;
    assert.deepEqual({ ...event, timestamp: typeof event.timestamp }, { event: 'ended', sessionId: session.sessionId, deviceId: session.id, timestamp: 'string', reason: 'service shutdown' });
    assert.match(service.output(), /sending 1 MQTT message\(s\) \(1 session event\(s\)\) that the MQTT broker did not get before the last stop/);
    return { events, service };
  };

  it('the next start publishes their `ended` event, with the reason it records', async () => {
    const { args, first, id, sessionId, topic, sub } = await serviceWithSession();
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

  // A clean stop ends its sessions too; with the broker away it could not hand their `ended` events over.
  it('a clean stop while the broker is away keeps their `ended` events, and the next start sends them once', async () => {
    const { args, first, id, sessionId, topic } = await serviceWithSession();
    await stoppedWithBrokerAway(first);

    const { events, service: second } = await keptEventSentAfterRestart(args, { id, sessionId, topic });
    second.proc.kill('SIGTERM');
    assert.equal(await second.exited, 0);
    assert.doesNotMatch(second.output(), /did not get 1 MQTT message/, 'the broker was there at this stop');

    const third = await spawnService(args);
    await waitUntil(() => brokerConnected(third.url), 'the third start to connect');
    assert.doesNotMatch(third.output(), /did not get before the last stop/);
    third.proc.kill('SIGTERM');
    await third.exited;
    assert.deepEqual(events.on(topic).map((m) => (JSON.parse(m.payload) as { event: string }).event), ['ended']);
  });

  // A start that took the kept messages while the broker was still away wrote their removal at its next
  // flush: killed then, before any broker had them, it lost them, and no later start sent them.
  it('a start killed before its broker is back has not dropped the kept `ended` events: a later start sends them', async () => {
    const { args, first, id, sessionId, topic } = await serviceWithSession();
    await stoppedWithBrokerAway(first);

    // The broker still away; the file written after the messages were taken: by the timed flush, and by a registration.
    const second = await spawnService([...args, '--Storage.FlushInterval', '00:00:00.100']);
    await waitUntil(() => /sending 1 MQTT message\(s\) \(1 session event\(s\)\) that the MQTT broker did not get before the last stop/.test(second.output()), 'the second start to take the kept message');
    await registerDevice({ url: second.url } as TestService);
    await new Promise((resolve) => setTimeout(resolve, 500));
    second.proc.kill('SIGKILL');
    await second.exited;

    const { events, service: third } = await keptEventSentAfterRestart(args, { id, sessionId, topic });
    third.proc.kill('SIGTERM');
    assert.equal(await third.exited, 0);

    // Delivered: the next start has nothing kept, and sends nothing twice.
    const fourth = await spawnService(args);
    await waitUntil(() => brokerConnected(fourth.url), 'the fourth start to connect');
    assert.doesNotMatch(fourth.output(), /did not get before the last stop/);
    fourth.proc.kill('SIGTERM');
    await fourth.exited;
    assert.deepEqual(events.on(topic).map((m) => (JSON.parse(m.payload) as { event: string }).event), ['ended']);
  });
});
