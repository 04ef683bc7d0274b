// The hub's own state on MQTT (`<prefix>/hub/state`, read by its Home Assistant device):
// active sessions, devices online and the upstream's state follow what happens in the service, from
// its events: registrations and status updates, sessions started and stopped, the upstream voice
// server going away during a session, coming back, and staying away. Real broker, service and echo server.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { startService, type TestService } from '../support/service.js';
import { registerDevice } from '../support/tokens.js';
import { startEcho, startSession } from '../support/voice.js';
import { waitUntil } from '../support/wait.js';
import type { EchoServer } from '../../src/upstream/echo-server.js';
import { Subscriber } from './helpers.js';

interface HubState {
  version: string;
  activeSessions: number;
  devicesOnline: number;
  upstream: string;
}

describe('the hub state on MQTT', () => {
  let broker: Mosquitto;
  let echo: EchoServer;
  let svc: TestService;
  let sub: Subscriber;
  let topic = '';
  const states = (): HubState[] => sub.on(topic).map((m) => JSON.parse(m.payload) as HubState);
  /** Waits until the latest published state is `expected` (the version aside); returns every state so far. */
  const becomes = async (expected: Omit<HubState, 'version'>, what: string): Promise<HubState[]> => {
    const matches = (s: HubState | undefined): boolean => s !== undefined && JSON.stringify({ ...s, version: undefined }) === JSON.stringify({ ...expected, version: undefined });
    try {
      await waitUntil(() => matches(states().at(-1)), what, 15_000);
    } catch (e) {
      throw new Error(`${(e as Error).message}; states: ${JSON.stringify(states())}`);
    }
    return states();
  };

  before(async () => {
    broker = await startMosquitto();
    echo = await startEcho();
    svc = await startService({
      flags: {
        'Mqtt.BrokerAddress': '127.0.0.1',
        'Mqtt.Port': broker.port,
        'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice`,
        'VoiceService.ReconnectAttempts': 3,
        'VoiceService.ReconnectDelay': '00:00:00.2000000',
        'VoiceService.ReconnectMaxDelay': '00:00:00.4000000',
      },
    });
    topic = 'voice-hub/hub/state';
    sub = await Subscriber.connect(broker.port, [topic]);
  });
  after(async () => {
    await sub?.end();
    await svc?.stop();
    await broker?.stop();
  });

  it('is published retained at connect: no sessions, no devices, upstream idle, the version', async () => {
    await becomes({ activeSessions: 0, devicesOnline: 0, upstream: 'idle' }, 'the first state');
    assert.equal(states().at(-1)!.version, 'dev');
    const late = await Subscriber.connect(broker.port, [topic]);
    try {
      const retained = await late.waitFor((m) => m.retain, 'the retained state');
      assert.deepEqual(JSON.parse(retained.payload), { version: 'dev', activeSessions: 0, devicesOnline: 0, upstream: 'idle' });
    } finally {
      await late.end();
    }
  });

  it('counts devices online by their last status, and only sends a change', async () => {
    const a = await registerDevice(svc);
    await becomes({ activeSessions: 0, devicesOnline: 1, upstream: 'idle' }, 'one device online');
    const b = await registerDevice(svc);
    await becomes({ activeSessions: 0, devicesOnline: 2, upstream: 'idle' }, 'two devices online');
    const sent = states().length;
    for (const [device, status] of [[a, 'busy'], [a, 'sleeping'], [b, 'offline']] as const) {
      const res = await call(svc.url, 'PUT', `/api/device/${device.id}/status`, { token: device.token, body: { status } });
      assert.equal(res.status, 200, res.text);
    }
    await becomes({ activeSessions: 0, devicesOnline: 1, upstream: 'idle' }, 'b offline');
    assert.equal(states().length, sent + 1, 'busy and sleeping are online: no new state for them');
    const res = await call(svc.url, 'PUT', `/api/device/${b.id}/status`, { token: b.token, body: { status: 'Online' } });
    assert.equal(res.status, 200, res.text);
    await becomes({ activeSessions: 0, devicesOnline: 2, upstream: 'idle' }, 'b back online');
  });

  it('counts active sessions; upstream connected while one runs, idle after', async () => {
    const d1 = await registerDevice(svc);
    const d2 = await registerDevice(svc);
    const s1 = await startSession(svc, d1.id, d1.token);
    await becomes({ activeSessions: 1, devicesOnline: 4, upstream: 'connected' }, 'one session');
    await startSession(svc, d2.id, d2.token);
    await becomes({ activeSessions: 2, devicesOnline: 4, upstream: 'connected' }, 'two sessions');
    assert.equal((await call(svc.url, 'POST', '/api/voice/stop', { token: d1.token, body: { sessionId: s1.sessionId } })).status, 200);
    await becomes({ activeSessions: 1, devicesOnline: 4, upstream: 'connected' }, 'one stopped');
    await svc.app.sessions.stopAllForDevice(d2.id);
    await becomes({ activeSessions: 0, devicesOnline: 4, upstream: 'idle' }, 'none left');
  });

  it('upstream reconnecting while it is away, connected once it is back, unreachable once reconnects run out', async () => {
    const d = await registerDevice(svc);
    await startSession(svc, d.id, d.token);
    await becomes({ activeSessions: 1, devicesOnline: 5, upstream: 'connected' }, 'a session');
    const port = echo.port;
    await echo.close();
    await becomes({ activeSessions: 1, devicesOnline: 5, upstream: 'reconnecting' }, 'the upstream gone');
    echo = await startEcho(port);
    await becomes({ activeSessions: 1, devicesOnline: 5, upstream: 'connected' }, 'the upstream back');

    await echo.close();
    await becomes({ activeSessions: 0, devicesOnline: 5, upstream: 'unreachable' }, 'reconnects spent: the session failed');
    // A start the upstream refuses changes nothing; one it accepts clears it.
    const refused = await call(svc.url, 'POST', '/api/voice/start', { token: d.token, body: { deviceId: d.id, userId: 'u' } });
    assert.equal(refused.status, 502);
    assert.deepEqual({ ...states().at(-1), version: undefined }, { version: undefined, activeSessions: 0, devicesOnline: 5, upstream: 'unreachable' });
    echo = await startEcho(port);
    await startSession(svc, d.id, d.token);
    await becomes({ activeSessions: 1, devicesOnline: 5, upstream: 'connected' }, 'a new session');
  });
});

/**
 * A TCP relay to the echo server whose listener can stop while the connections it relays stay open, so a
 * new start is refused (ECONNREFUSED) while the sessions already connected keep their upstream.
 */
async function startRelay(target: number): Promise<{ port: number; links: net.Socket[]; stopListening(): Promise<void>; listen(): Promise<void>; close(): void }> {
  const links: net.Socket[] = [];
  const sockets = new Set<net.Socket>();
  const serve = (): net.Server =>
    net.createServer((client) => {
      const upstream = net.connect(target, '127.0.0.1');
      for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
        sockets.add(a);
        a.pipe(b);
        a.on('error', () => b.destroy());
        a.on('close', () => b.destroy());
      }
      links.push(client);
    });
  let server = serve();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    links,
    // close() stops listening at once; its callback would wait for the relayed connections to end.
    stopListening: () => {
      server.close();
      return Promise.resolve();
    },
    listen: async () => {
      server = serve();
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    close: () => {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}

describe('the hub state on MQTT while one upstream connection is open and others fail', () => {
  it('stays connected through a refused start and another session failing; unreachable once none is left', { timeout: 60_000 }, async () => {
    const broker = await startMosquitto();
    const echo = await startEcho();
    const relay = await startRelay(echo.port);
    const svc = await startService({
      flags: {
        'Mqtt.BrokerAddress': '127.0.0.1',
        'Mqtt.Port': broker.port,
        'VoiceService.ServerUrl': `ws://127.0.0.1:${relay.port}/voice`,
        'VoiceService.ReconnectAttempts': 2,
        'VoiceService.ReconnectDelay': '00:00:00.1000000',
        'VoiceService.ReconnectMaxDelay': '00:00:00.2000000',
      },
    });
    const topic = 'voice-hub/hub/state';
    const sub = await Subscriber.connect(broker.port, [topic]);
    try {
      const upstream = (): string[] => sub.on(topic).map((m) => (JSON.parse(m.payload) as HubState).upstream);
      const last = (): Pick<HubState, 'activeSessions' | 'upstream'> | undefined => {
        const m = sub.on(topic).at(-1);
        if (!m) return undefined;
        const { activeSessions, upstream: state } = JSON.parse(m.payload) as HubState;
        return { activeSessions, upstream: state };
      };
      const becomes = async (expected: Pick<HubState, 'activeSessions' | 'upstream'>, what: string): Promise<void> =>
        waitUntil(() => JSON.stringify(last()) === JSON.stringify(expected), `${what}; states: ${JSON.stringify(upstream())}`, 15_000);

      const a = await registerDevice(svc);
      const b = await registerDevice(svc);
      await startSession(svc, a.id, a.token);
      await startSession(svc, b.id, b.token);
      await becomes({ activeSessions: 2, upstream: 'connected' }, 'two sessions connected');
      assert.equal(relay.links.length, 2);

      await relay.stopListening();
      const refused = await call(svc.url, 'POST', '/api/voice/start', { token: a.token, body: { deviceId: a.id, userId: 'u' } });
      assert.equal(refused.status, 502, refused.text);
      // b's connection is cut and cannot come back: its reconnects run out and it fails, while a's stays open.
      relay.links[1]!.destroy();
      await becomes({ activeSessions: 1, upstream: 'connected' }, "b failed, a's connection still open");
      assert.deepEqual(upstream().filter((s) => s !== 'connected' && s !== 'idle'), [], 'never anything but connected while a link was open');

      relay.links[0]!.destroy();
      await becomes({ activeSessions: 0, upstream: 'unreachable' }, "a's reconnects ran out too");
      await relay.listen();
      await startSession(svc, b.id, b.token);
      await becomes({ activeSessions: 1, upstream: 'connected' }, 'a new session connects');
    } finally {
      await sub.end();
      await svc.stop();
      relay.close();
      await broker.stop();
    }
  });
});
