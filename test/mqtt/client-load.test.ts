// mqtt.js is loaded when a connection starts, not with the module (a service with MQTT off never
// evaluates it): a connection ended while it loads must never open a socket, and one left alone connects
// once it has loaded. A plain TCP listener on loopback counts the connection attempts (it never answers,
// which is all either case needs). mqtt.js is CommonJS, so whether it was loaded, and how much of it, shows
// in require.cache.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import { BrokerConnection, type ConnectionOptions } from '../../src/mqtt/client.js';
import { waitUntil } from '../support/wait.js';

const loaded = (part: string): boolean => Object.keys(createRequire(import.meta.url).cache).some((f) => f.includes(part));
const mqttLoaded = (): boolean => loaded('/node_modules/mqtt/');

describe('BrokerConnection and the loading of mqtt.js', () => {
  let accepted = 0;
  const sockets: net.Socket[] = [];
  const server = net.createServer((s) => {
    accepted++;
    sockets.push(s);
  });
  const listening = new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  const options = (port: number): ConnectionOptions => ({
    host: '127.0.0.1', port, username: '', password: '', clientId: 'vh-load-test',
    will: { topic: 'vh-load-test/status', payload: 'offline', retain: true },
    keepaliveSeconds: 30, reconnectMinMs: 60_000, reconnectMaxMs: 60_000, connectTimeoutMs: 5000,
  });
  const events = { connected: () => {}, disconnected: () => {}, message: () => {}, skipped: () => {}, subscriptionRefused: () => {} };

  it('ended before mqtt.js has loaded: no connection is ever attempted, and ending is immediate', async () => {
    const port = await listening;
    assert.equal(mqttLoaded(), false, 'importing the client does not load mqtt.js');
    const before = accepted;
    const connection = new BrokerConnection(options(port), events);
    connection.start();
    await connection.end(undefined, 1000);
    assert.equal(connection.connected, false);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(accepted, before);
  });

  it('left alone: it connects once mqtt.js has loaded, and a second start() opens no second socket', async (t) => {
    const port = await listening;
    const before = accepted;
    const connection = new BrokerConnection(options(port), events);
    t.after(() => connection.end(undefined, 1000));
    connection.start();
    connection.start();
    await waitUntil(() => accepted > before, 'a connection to the listener');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(accepted, before + 1);
    assert.equal(mqttLoaded(), true);
    // The client class alone: none of the transports mqtt.js can open itself (we give it our socket).
    assert.equal(loaded('/node_modules/mqtt/build/lib/connect/'), false);
    assert.equal(loaded('/node_modules/socks/'), false);
  });
});
