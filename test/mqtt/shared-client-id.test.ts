// Two hubs with one client id (a hub started from a copy of another's data directory: the instance-id
// file names the MQTT client). The broker closes one connection whenever the other connects; both used to
// reconnect every second, each time publishing all their state again, without end and with nothing in
// the log saying why. Now a connection the broker closes right after accepting it counts as a failed
// attempt, so the back-off grows, and the warning names the likely cause. A real mosquitto.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/log/logger.js';
import { takenOverText } from '../../src/mqtt/connection-reasons.js';
import { MqttPublisher } from '../../src/mqtt/publisher.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { sleep, waitUntil } from '../support/wait.js';
import { publisherOptions, STOPPED_LISTENING } from './helpers.js';

/** How long the two fight in the test; the back-off runs 100 ms, 200, 400, 800, then 1 s. */
const FIGHT_MS = 6000;

describe('two hubs sharing one MQTT client id', () => {
  let broker: Mosquitto;
  before(async () => {
    broker = await startMosquitto();
  });
  after(() => broker?.stop());

  /**
   * A hub that retries after 1 to 2 s: past a broker's restart (a busy machine took more than 100 ms), so no
   * refused attempt adds a line of its own. Its log lines go to `into`.
   */
  function restartedHub(instanceId: string, into: string[]): { hub: MqttPublisher; connects: () => number } {
    const hub = new MqttPublisher(publisherOptions(broker.port, {
      instanceId,
      reconnectMinMs: 1000,
      reconnectMaxMs: 2000,
      logger: createLogger({ levels: { Default: 'Information' }, write: (line) => into.push(line) }),
    }));
    return { hub, connects: () => into.filter((x) => /(re)?connected to MQTT broker/.test(x)).length };
  }

  it('back off as a failing connection does, and say which client id the broker gives away', async () => {
    const lines: string[][] = [[], []];
    const instanceId = 'c10ned1d0000';
    const hubs = lines.map((into) => new MqttPublisher(publisherOptions(broker.port, {
      instanceId,
      reconnectMinMs: 100,
      reconnectMaxMs: 1000,
      logger: createLogger({ levels: { Default: 'Information' }, write: (line) => into.push(line) }),
    })));
    try {
      for (const h of hubs) h.start();
      await sleep(FIGHT_MS);
    } finally {
      await Promise.all(hubs.map((h) => h.close()));
    }
    const connects = lines.map((l) => l.filter((x) => /(re)?connected to MQTT broker/.test(x)).length);
    // With a fixed 100 ms between attempts each hub connected 25 times and more in 6 s.
    assert.ok(connects.every((n) => n >= 2 && n <= 12), `connects per hub: ${connects.join(', ')}`);
    const warning = `unavailable: ${takenOverText(`voice-hub-${instanceId}`)}; retrying`;
    assert.ok(lines.some((l) => l.some((x) => x.includes(warning))), lines.flat().join('\n'));
  });

  it('a broker restarted right after the hub connected is not called a takeover: one short connection says how long it lasted', async () => {
    const into: string[] = [];
    const { hub, connects } = restartedHub('5e1f0000a11e', into);
    try {
      hub.start();
      await waitUntil(() => connects() === 1, 'the first connection');
      await broker.restart();
      await waitUntil(() => connects() === 2, 'the connection after the restart', 10_000);
    } finally {
      await hub.close();
    }
    const unavailable = into.filter((x) => x.includes('unavailable'));
    assert.equal(unavailable.length, 1, into.join('\n'));
    // A clean close says how long the connection lasted and that the broker stopped listening; the hub may
    // instead have been writing as the broker went (EPIPE, a reset), and then that error is the reason.
    assert.match(unavailable[0]!, new RegExp(`unavailable: (${STOPPED_LISTENING}|write EPIPE|read ECONNRESET|write ECONNRESET); retrying$`));
    assert.ok(!into.some((x) => x.includes(takenOverText('voice-hub-5e1f0000a11e'))), into.join('\n'));
  });

  it('a broker restarted twice in a row right after the hub connected is not called a takeover: it stopped listening each time', async () => {
    const into: string[] = [];
    const clientId = 'voice-hub-2e57a27ed000';
    // The restarted broker listens again before the hub retries, as a broker that restarts quickly
    // (systemctl restart mosquitto) does, so no refused attempt ends the row in between.
    const { hub, connects } = restartedHub('2e57a27ed000', into);
    try {
      hub.start();
      for (let n = 1; n <= 3; n++) {
        await waitUntil(() => connects() === n, `connection ${n}`, 10_000);
        // Once the hub has sent its state and the broker acknowledged it, so the close finds it reading, not writing.
        await waitUntil(() => hub.stats().inFlight === 0 && hub.stats().queued === 0, `the state sent on connection ${n}`);
        await sleep(100);
        await broker.restart();
      }
      await waitUntil(() => connects() === 4, 'the connection after the third restart', 10_000);
    } finally {
      await hub.close();
    }
    const unavailable = into.filter((x) => x.includes('unavailable'));
    assert.ok(!into.some((x) => x.includes(takenOverText(clientId))), into.join('\n'));
    assert.equal(unavailable.length, 3, into.join('\n'));
    for (const line of unavailable) assert.match(line, new RegExp(`unavailable: (${STOPPED_LISTENING}|write EPIPE|read ECONNRESET|write ECONNRESET); retrying$`));
  });
});
