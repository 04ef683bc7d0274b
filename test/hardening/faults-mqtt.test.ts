// The MQTT broker (a real mosquitto) stopped and started again under the built bundle (a down
// broker never slows or fails an HTTP request; the outgoing queue is bounded; in /health
// mqtt is Degraded when not connected). While it is down, registrations and status updates keep
// answering 200 and /health says Degraded (still 200); once it is back, /health is Healthy again and
// the broker, which restarted without persistence, holds the retained state of every device, also
// of those registered during the outage.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer, type EchoServer } from '../../src/upstream/echo-server.js';
import { Subscriber } from '../mqtt/helpers.js';
import { call } from '../support/http.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { assertHealthyProcess, registerDevice, startDaemon, type Daemon } from './daemon.js';
import { waitUntil } from '../support/wait.js';

let broker: Mosquitto;
let echo: EchoServer;
let daemon: Daemon;
const devices: { id: string; token: string }[] = [];

before(async () => {
  broker = await startMosquitto();
  // An upstream, so that /health depends on MQTT alone.
  echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
  daemon = await startDaemon({
    settings: { Mqtt: { BrokerAddress: '127.0.0.1', Port: broker.port }, VoiceService: { ServerUrl: `ws://127.0.0.1:${echo.port}/voice` } },
  });
});

after(async () => {
  await daemon?.stop();
  await broker?.stop();
  await echo?.close();
});

const mqttEntry = async (): Promise<{ http: number; overall: string; mqtt: string }> => {
  const res = await call(daemon.url, 'GET', '/health');
  return { http: res.status, overall: res.json.status, mqtt: res.json.entries.mqtt.status };
};

/** Retained device states on the broker right now (a fresh subscriber gets exactly the retained ones). */
async function retainedStates(): Promise<Map<string, { status: string }>> {
  const sub = await Subscriber.connect(broker.port, ['voice-hub/devices/+/state', 'hardening/barrier']);
  try {
    await sub.barrier('hardening/barrier');
    const out = new Map<string, { status: string }>();
    for (const m of sub.messages.filter((x) => x.retain && x.topic.startsWith('voice-hub/devices/'))) {
      out.set(m.topic.split('/')[2]!, JSON.parse(m.payload) as { status: string });
    }
    return out;
  } finally {
    await sub.end();
  }
}

describe('MQTT broker stopped and started again', () => {
  it('connected: /health Healthy, device state retained on the broker', async () => {
    await waitUntil(async () => (await mqttEntry()).mqtt === 'Healthy', 'mqtt Healthy', 15_000, 100);
    devices.push(await registerDevice(daemon.url));
    await waitUntil(async () => (await retainedStates()).has(devices[0]!.id), 'the first device state on the broker', 10_000, 200);
  });

  it('broker down: registrations and status updates still answer 200; /health Degraded (200)', async () => {
    await broker.stop();
    await waitUntil(async () => (await mqttEntry()).mqtt === 'Degraded', 'mqtt Degraded', 15_000, 100);
    const health = await mqttEntry();
    assert.deepEqual(health, { http: 200, overall: 'Degraded', mqtt: 'Degraded' });
    for (let i = 0; i < 10; i++) devices.push(await registerDevice(daemon.url));
    const update = await call(daemon.url, 'PUT', `/api/device/${devices[0]!.id}/status`, {
      token: devices[0]!.token,
      body: { status: 'busy', batteryLevel: 50, temperature: 30, memoryUsage: 20, cpuUsage: 10 },
    });
    assert.equal(update.status, 200, update.text);
    assertHealthyProcess(daemon);
  });

  it('broker back: /health Healthy, every device (also those registered meanwhile) retained with its latest state', async () => {
    await broker.restart();
    // The publisher retries with a growing delay (1 s, 2 s, 4 s, ...): bounded well above that.
    await waitUntil(async () => (await mqttEntry()).mqtt === 'Healthy', 'mqtt Healthy again', 30_000, 200);
    assert.deepEqual(await mqttEntry(), { http: 200, overall: 'Healthy', mqtt: 'Healthy' });
    let states = new Map<string, { status: string }>();
    await waitUntil(async () => {
      states = await retainedStates();
      return devices.every((d) => states.has(d.id));
    }, 'every device state on the restarted broker', 10_000, 200);
    assert.equal(states.get(devices[0]!.id)!.status, 'busy');
    assertHealthyProcess(daemon);
  });
});
