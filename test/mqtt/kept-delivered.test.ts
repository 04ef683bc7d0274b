// Messages a clean stop kept for the next start leave the database once the broker has them, not when the
// start takes them: taken and removed at once, the next flush wrote their removal, and a start killed
// before its broker came back had lost them (test/mqtt/interrupted-sessions.test.ts runs that on the
// bundle). A real mosquitto, paused with SIGSTOP; the store is a real one on disk.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { openStore } from '../../src/store/index.js';
import { silentLogger } from '../../src/log/logger.js';
import { onDisk } from '../store/helpers.js';
import { startMosquitto } from '../support/mosquitto.js';
import { scratchDir } from '../support/tmp.js';
import { sleep, waitUntil } from '../support/wait.js';
import { capturedLog, startedConfiguredPublisher, Subscriber } from './helpers.js';

describe('kept MQTT messages taken by a start', () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  it('stay on disk through flushes while the broker is away, and leave it once the broker has them', async () => {
    const broker = await startMosquitto();
    cleanup.push(() => broker.stop());
    const dir = await scratchDir();
    cleanup.push(() => dir.cleanup());
    const kept = { topic: 'voice-hub/sessions/s1/event', payload: '{"event":"ended","sessionId":"s1"}', retain: false };
    const first = await openStore({ dataDir: dir.path, flushIntervalMs: 60_000, logger: silentLogger });
    await first.brokerMessages.keep([kept]);
    await first.close();

    const store = await openStore({ dataDir: dir.path, flushIntervalMs: 60_000, logger: silentLogger });
    cleanup.push(() => store.close());
    const sub = await Subscriber.connect(broker.port, ['voice-hub/sessions/+/event']);
    cleanup.push(() => sub.end());
    broker.pause();
    const { lines, logger } = capturedLog();
    const { mqtt } = startedConfiguredPublisher(broker.port, store.brokerMessages, logger);
    cleanup.push(() => mqtt.close());
    assert.ok(lines.some((l) => l.includes('sending 1 MQTT message(s) (1 session event(s)) that the MQTT broker did not get before the last stop')), lines.join('\n'));

    // The broker away: a flush (any write) still leaves the message on disk for the next start.
    await sleep(1500);
    await store.flush();
    assert.deepEqual(await onDisk(dir.path, (s) => s.brokerMessages.take()), [kept]);

    broker.resume();
    await sub.waitFor((m) => m.topic === kept.topic, 'the kept message at the broker');
    await waitUntil(async () => {
      await store.flush();
      return (await onDisk(dir.path, (s) => s.brokerMessages.take())).length === 0;
    }, 'the delivered message to leave the file', 10_000, 200);
    assert.deepEqual(sub.on(kept.topic).map((m) => m.payload), [kept.payload]);
  });
});
