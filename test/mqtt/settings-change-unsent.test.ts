// What a broker never got while its settings change, when no new broker takes it: a stop that comes while
// the old connection closes (a stuck broker takes up to its close timeout), or MQTT switched off. Both
// dropped the old connection's undelivered messages and the session events held meanwhile (a stop's own
// `ended` events among them): the next start sent nothing. Now they are kept, as a stop keeps what its
// broker never got. A real mosquitto, stopped with SIGSTOP; the store is a real one on disk.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { ConfiguredMqttPublisher } from '../../src/mqtt/configured.js';
import type { SessionEventMessage } from '../../src/mqtt/session-events.js';
import type { MqttSettings } from '../../src/settings/categories.js';
import { openStore, type OpenedStore } from '../../src/store/index.js';
import { silentLogger } from '../../src/log/logger.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { scratchDir } from '../support/tmp.js';
import { sleep, waitUntil } from '../support/wait.js';
import { capturedLog, startedConfiguredPublisher } from './helpers.js';

describe('an MQTT settings change that no new broker follows', () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  const setUp = async (): Promise<{ mqtt: ConfiguredMqttPublisher; broker: Mosquitto; store: OpenedStore; lines: string[]; settings: MqttSettings; prefix: string }> => {
    const broker = await startMosquitto();
    cleanup.push(() => broker.stop());
    const dir = await scratchDir();
    const store = await openStore({ dataDir: dir.path, flushIntervalMs: 60_000, logger: silentLogger });
    cleanup.push(async () => {
      await store.close();
      await dir.cleanup();
    });
    const { lines, logger } = capturedLog();
    const { mqtt, settings, prefix } = startedConfiguredPublisher(broker.port, store.brokerMessages, logger);
    cleanup.push(() => mqtt.close());
    await waitUntil(() => mqtt.current()?.state().connected === true && mqtt.current()?.stats().queued === 0, 'connected, its own messages sent');
    return { mqtt, broker, store, lines, settings, prefix };
  };

  const at = '2026-12-03T08:00:00.000Z';
  const started = (sessionId: string): SessionEventMessage => ({ event: 'started', sessionId, deviceId: 'd1', timestamp: at });
  const ended = (sessionId: string): SessionEventMessage => ({ event: 'ended', sessionId, deviceId: 'd1', timestamp: at, reason: 'service shutdown' });
  const message = (prefix: string, e: SessionEventMessage) => ({ topic: `${prefix}/sessions/${e.sessionId}/event`, payload: JSON.stringify(e), retain: false });
  const kept = (store: OpenedStore) => store.brokerMessages.take().map(({ topic, payload, retain }) => ({ topic, payload, retain }));

  it('a stop while a stuck broker is being replaced keeps what it never got and what was held meanwhile', async () => {
    const { mqtt, broker, store, lines, settings, prefix } = await setUp();
    broker.pause();
    mqtt.publishSessionEvent('s1', started('s1'));
    const applying = mqtt.apply({ ...settings, port: 9 });
    // The old connection is closing (its broker answers nothing): events now are held for the next one.
    await sleep(100);
    mqtt.publishSessionEvent('s1', ended('s1'));
    await mqtt.close();
    await applying;
    broker.resume();
    assert.deepEqual(kept(store), [message(prefix, started('s1')), message(prefix, ended('s1'))]);
    assert.ok(lines.includes('info: Mqtt: the MQTT broker did not get 2 MQTT message(s) (2 session event(s)): kept in the database, sent after the next start'), lines.join('\n'));
  });

  it('MQTT switched off keeps what the broker never got, for when a broker is set again', async () => {
    const { mqtt, broker, store, lines, settings, prefix } = await setUp();
    broker.pause();
    mqtt.publishSessionEvent('s2', ended('s2'));
    await waitUntil(() => mqtt.current()?.stats().inFlight === 1, 'the event handed to the broker');
    await mqtt.apply({ ...settings, brokerAddress: '' });
    broker.resume();
    assert.equal(mqtt.current(), undefined);
    assert.ok(lines.includes('info: Mqtt: the MQTT broker did not get 1 MQTT message(s) (1 session event(s)): kept in the database, sent once a broker is set again'), lines.join('\n'));
    assert.deepEqual(kept(store), [message(prefix, ended('s2'))]);
  });
});
