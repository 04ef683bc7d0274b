// The HTTP requests of `voice-hub health` and `voice-hub simulate` (src/cli/http-request.ts) reach the
// service on whatever port it listens, and report a redirect instead of following it. On fetch, a
// service on a port browsers block (6000, 6665-6669, 5060, ...) was "not reachable ...: bad port" to
// `health` (exit 3) and failed every simulated device; and behind Server.HttpsRedirect the simulator's
// registration was followed to HTTPS while its session start, whose Authorization fetch drops on a
// redirect to another origin, came back 401 "A bearer token is required".
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { describe, it } from 'node:test';
import { healthCommand } from '../../src/cli/health.js';
import { apiRequest } from '../../src/cli/sim-device.js';
import { runSimulation } from '../../src/cli/simulate.js';
import { makeSelfSigned } from '../https/helpers.js';
import { runBundle, startService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { adminToken } from '../support/tokens.js';
import { startVoiceRig } from '../support/voice.js';

/** Ports of fetch's "bad port" list (the browsers' blocked ports) that a user may listen on. */
const BLOCKED_BY_FETCH = [6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080, 6000, 6566, 5060, 5061, 4190, 3659, 2049, 1719, 1720, 1723, 4045];

/** The first of them free on 127.0.0.1 now. */
async function freeBlockedPort(): Promise<number> {
  for (const port of BLOCKED_BY_FETCH) {
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`none of ${BLOCKED_BY_FETCH.join(', ')} is free`);
}

describe('a service on a port browsers block', () => {
  it('health reports it, and simulate streams through it', async () => {
    const port = await freeBlockedPort();
    const { svc } = await startVoiceRig({ flags: { 'Server.Port': port } });
    assert.equal(svc.port, port);

    const health = await runBundle(['health', '--url', svc.url]);
    assert.equal(health.stderr, '');
    assert.equal(health.code, 0);
    assert.match(health.stdout, /^Overall: Healthy /);

    const report = await runSimulation({ url: svc.url, devices: 1, seconds: 1, adminToken: await adminToken(svc), log: () => {} });
    assert.deepEqual(report.failures, []);
    assert.equal(report.packets.lost, 0);
    assert.equal(report.responses.lost, 0);
  });
});

describe('a service that redirects plain HTTP to HTTPS', () => {
  it("the simulator's request is answered with the redirect, which its failure names", async () => {
    const dir = tmpDir();
    const { cert, key } = makeSelfSigned(dir);
    const svc = await startService({
      flags: { 'Server.HttpsPort': 0, 'Server.Certificate.Path': cert, 'Server.Certificate.KeyPath': key, 'Server.HttpsRedirect': true, 'Mqtt.BrokerAddress': '' },
    });
    const api = { baseUrl: `${svc.url}/`, timeoutMs: 10_000 };
    const body = { deviceId: 'redirected', deviceName: 'n', deviceType: 't' };
    await assert.rejects(apiRequest(api, 'POST', '/api/device/register', body), {
      status: 308,
      message: `POST /api/device/register: HTTP 308 (a redirect to https://127.0.0.1:${svc.app.httpsPort}/api/device/register, not followed: give the address it names)`,
    });
  });

  it("health's refusal of a redirect names where it points, set apart by a space", async () => {
    // /health itself is not redirected; a --url with a path before it is. The note lost its space
    // ("HTTP 308(a redirect ...") to the trimming that keeps a hostile answer's text on one line.
    const dir = tmpDir();
    const { cert, key } = makeSelfSigned(dir);
    const svc = await startService({
      flags: { 'Server.HttpsPort': 0, 'Server.Certificate.Path': cert, 'Server.Certificate.KeyPath': key, 'Server.HttpsRedirect': true, 'Mqtt.BrokerAddress': '' },
    });
    assert.deepEqual(await healthCommand(`${svc.url}/api/health`), {
      code: 3,
      text: `${svc.url}/api/health answered HTTP 308 (a redirect to https://127.0.0.1:${svc.app.httpsPort}/api/health, not followed: give the address it names) ` +
        'without a voice-hub health report (JSON with a status of Healthy, Degraded or Unhealthy and its entries)\n',
    });
  });
});

describe('simulate --drop-every against HTTPS with a certificate for a host name', () => {
  it('checks the certificate for the name in --url while connecting through its relay', async () => {
    // docs/https.md's certificates name the Pi (voicepi.local), not 127.0.0.1. The relay's address took
    // the name's place in the hub URL, so TLS checked the certificate for 127.0.0.1 and every device
    // failed: "Failed to complete negotiation with the server: TypeError: request failed".
    const dir = tmpDir();
    const cert = path.join(dir, 'name.crt');
    const key = path.join(dir, 'name.key');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-sha256', '-days', '2', '-keyout', key, '-out', cert,
      '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { stdio: ['ignore', 'ignore', 'pipe'] });
    const { svc } = await startVoiceRig({ flags: { 'Server.HttpsPort': 0, 'Server.Certificate.Path': cert, 'Server.Certificate.KeyPath': key } });
    const run = await runBundle(
      ['simulate', '--url', `https://localhost:${svc.app.httpsPort}`, '--seconds', '2', '--drop-every', '1', '--drop-for', '100',
        '--stateful-reconnect', '--admin-token', await adminToken(svc)],
      { NODE_EXTRA_CA_CERTS: cert },
      30_000,
    );
    assert.doesNotMatch(run.stderr, /failed/, run.stderr);
    assert.match(run.stdout, /^result: OK \(nothing lost or duplicated\)$/m, run.stdout + run.stderr);
    assert.match(run.stderr, /^drop 1: cutting every hub connection, new ones wait 100 ms$/m, run.stderr);
    assert.equal(run.code, 0);
  });

  it('sends the Host of --url through its relay, which AllowedHosts checks', async () => {
    // The relay's 127.0.0.1:<port> went out as the Host header: a service whose AllowedHosts lists the
    // name devices use refused every negotiation with 400 "Invalid Hostname".
    const { svc } = await startVoiceRig({ flags: { AllowedHosts: 'localhost' } });
    const report = await runSimulation({
      url: `http://localhost:${svc.port}`, devices: 1, seconds: 2, dropEverySeconds: 1, dropForMs: 100, statefulReconnect: true,
      adminToken: await adminToken(svc), log: () => {},
    });
    assert.deepEqual(report.failures, []);
    assert.deepEqual({ lost: report.packets.lost, responsesLost: report.responses.lost, drops: report.drops?.count }, { lost: 0, responsesLost: 0, drops: 1 });
  });
});
