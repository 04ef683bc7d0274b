// HTTP/1.1 pipelining (RFC 9112 section 9.3.2) over raw sockets against the service on a loopback port:
// every pipelined request is answered once, in order, with the bytes it gets when sent alone, and no
// request changes anything without its answer reaching the client. uWS reads a whole read's requests
// at once and closes the connection when a complete request follows an unanswered one in the same
// read; docs/security.md "HTTP/1.1 framing and pipelining" says what that leaves.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { call } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';
import { checkProperty } from './property.js';
import { assertClosedAtOnce, CLOSED_AT_ONCE_MS, comparable, exchange, keepAliveRequest } from '../support/raw-http.js';

let svc: TestService;
let admin: string;
let device: { id: string; token: string };
// An upstream that accepts and never answers the WebSocket handshake: a session start then waits the
// whole connect timeout (1 s) before its 502, an answer that is certainly still pending when the next
// request arrives.
let blackHole: net.Server;
const held: net.Socket[] = [];

before(async () => {
  blackHole = net.createServer((s) => {
    held.push(s);
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
  const port = (blackHole.address() as net.AddressInfo).port;
  // Room for the registrations of the properties (the default allows 10 devices).
  svc = await startService({
    flags: { 'VoiceService.ServerUrl': `ws://127.0.0.1:${port}/voice`, 'VoiceService.ConnectTimeout': '00:00:01', 'DeviceManagement.MaxDevices': 1000 },
  });
  admin = await adminToken(svc);
  device = await registerDevice(svc, { deviceId: 'pipelined' });
});

after(() => {
  for (const s of held) s.destroy();
  blackHole.close();
});

const json = (body: unknown): string => JSON.stringify(body);
const registerBody = (id: string): string => json({ deviceId: id, deviceName: 'Pipelined', deviceType: 'speaker' });
const register = (id: string): Buffer => keepAliveRequest('POST', '/api/device/register', [['Content-Type', 'application/json']], registerBody(id));
/** Waits the upstream connect timeout, then 502. */
const slowStart = (): Buffer =>
  keepAliveRequest('POST', '/api/voice/start', [['Content-Type', 'application/json'], ['Authorization', `Bearer ${device.token}`]], json({ deviceId: device.id }));

/** Requests answered before their handler's promise jobs run out: uWS pipelines those itself. */
const quick: Record<string, () => Buffer> = {
  notFound: () => keepAliveRequest('GET', '/api/nothing', []),
  wrongMethod: () => keepAliveRequest('GET', '/api/voice/start', []),
  badPath: () => keepAliveRequest('DELETE', '/api/device/%E0%A4%A', [['Authorization', `Bearer ${admin}`]]),
  notJson: () => keepAliveRequest('POST', '/api/device/register', [['Content-Type', 'text/plain']], 'hello'),
  badJson: () => keepAliveRequest('POST', '/api/device/register', [['Content-Type', 'application/json']], '{"deviceId":'),
  invalidBody: () => keepAliveRequest('POST', '/api/device/register', [['Content-Type', 'application/json']], json({ deviceId: 7 })),
  noToken: () => keepAliveRequest('GET', '/api/device/list', []),
  badHost: () => Buffer.from(keepAliveRequest('GET', '/api/nothing', []).toString('latin1').replace('Host: 127.0.0.1', 'Host: bad host'), 'latin1'),
};

async function registered(id: string): Promise<boolean> {
  const res = await call(svc.url, 'GET', '/api/device/list', { token: admin });
  return (res.json as { devices: Array<{ id: string }> }).devices.some((d) => d.id === id);
}

/** The answer to `request` sent alone on a connection of its own. */
async function alone(request: Buffer): Promise<string> {
  const answer = await exchange(svc.port, [request], { expect: 1 });
  assert.equal(answer.responses.length, 1, `no answer to ${request.toString('latin1').slice(0, 80)}`);
  return comparable(answer.responses[0]!);
}

/** `bytes` cut at the given offsets (sorted, deduplicated, inside the buffer). */
function cut(bytes: Buffer, at: readonly number[]): Buffer[] {
  const points = [...new Set(at.map((p) => p % bytes.length))].filter((p) => p > 0).sort((a, b) => a - b);
  return [0, ...points].map((p, i) => bytes.subarray(p, points[i] ?? bytes.length));
}

describe('pipelined requests are answered in order', () => {
  it('property: any sequence of quickly answered requests, cut at random bytes, is answered in order as each alone', async () => {
    const names = Object.keys(quick);
    const expected = new Map<string, string>();
    for (const name of names) expected.set(name, await alone(quick[name]!()));
    const run = fc.record({
      sequence: fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 10 }),
      cuts: fc.array(fc.nat(), { maxLength: 12 }),
      gapMs: fc.constantFrom(0, 0, 1, 3),
    });
    await checkProperty(fc.asyncProperty(run, async ({ sequence, cuts, gapMs }) => {
      const bytes = Buffer.concat(sequence.map((n) => quick[n]!()));
      const answer = await exchange(svc.port, cut(bytes, cuts), { gapMs, expect: sequence.length });
      assert.deepEqual(answer.responses.map(comparable), sequence.map((n) => expected.get(n)), `for ${sequence.join(', ')}`);
      assert.equal(answer.rest.length, 0);
    }), 40);
  });

  it('a request that waits for I/O, last behind quick ones in one read: all answered in order', async () => {
    const bytes = Buffer.concat([quick.notFound!(), quick.badJson!(), register('last-in-read')]);
    const answer = await exchange(svc.port, [bytes], { expect: 3 });
    assert.deepEqual(answer.responses.map((r) => r.status), [404, 400, 200]);
    assert.equal(await registered('last-in-read'), true);
  });

  it('a slow answer, then requests in later reads: they wait for it and are answered in order', async () => {
    const answer = await exchange(svc.port, [slowStart(), quick.notFound!(), register('behind-slow')], { gapMs: 200, expect: 3 });
    assert.deepEqual(answer.responses.map((r) => r.status), [502, 404, 200]);
    assert.equal(await registered('behind-slow'), true);
  });

  it('a slow answer, then nine requests in one later read: ten answers in order', async () => {
    const followers = [...Object.values(quick), quick.notFound!].map((q) => q());
    const expected = await Promise.all(followers.map(alone));
    const answer = await exchange(svc.port, [slowStart(), Buffer.concat(followers)], { gapMs: 200, expect: 10 });
    assert.equal(answer.responses[0]?.status, 502);
    assert.deepEqual(answer.responses.slice(1).map(comparable), expected);
  });

  it('async after async, each in its own read after the previous answer: all answered', async () => {
    const answer = await exchange(svc.port, [slowStart(), slowStart(), register('after-two-slow')], { gapMs: 1300, expect: 3 });
    assert.deepEqual(answer.responses.map((r) => r.status), [502, 502, 200]);
  });
});

describe('no change without its answer', () => {
  it('property: quick requests, registrations and status updates in any order, cut at random bytes: answers in order, each registration applied exactly when answered', async () => {
    // A token the service has verified before is checked without I/O: the status update is answered quickly.
    const statusUpdate = (): Buffer =>
      keepAliveRequest('PUT', `/api/device/${device.id}/status`, [['Content-Type', 'application/json'], ['Authorization', `Bearer ${device.token}`]], json({ status: 'online' }));
    assert.equal((await exchange(svc.port, [statusUpdate()], { expect: 1 })).responses[0]?.status, 200);
    const names = Object.keys(quick);
    const expected = new Map<string, string>();
    for (const name of names) expected.set(name, await alone(quick[name]!()));
    let next = 0;
    const step = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...names).map((name) => ({ name })) },
      { weight: 2, arbitrary: fc.constant({ name: 'register' }) },
      { weight: 1, arbitrary: fc.constant({ name: 'status' }) },
    );
    const run = fc.record({
      steps: fc.array(step, { minLength: 1, maxLength: 6 }),
      cuts: fc.array(fc.nat(), { maxLength: 8 }),
      gapMs: fc.constantFrom(0, 1, 5, 30),
    });
    await checkProperty(fc.asyncProperty(run, async ({ steps, cuts, gapMs }) => {
      const sent = steps.map(({ name }) => (name === 'register' ? { name, id: `prop-${process.pid}-${++next}` } : { name, id: '' }));
      const bytes = Buffer.concat(sent.map((r) => (r.name === 'register' ? register(r.id) : r.name === 'status' ? statusUpdate() : quick[r.name]!())));
      const answer = await exchange(svc.port, cut(bytes, cuts), { gapMs, expect: sent.length, idleMs: 700 });
      const got = answer.responses;
      assert.ok(got.length <= sent.length);
      got.forEach((res, i) => {
        const r = sent[i]!;
        if (r.name === 'register' || r.name === 'status') assert.equal(res.status, 200, `${r.name} #${i}: ${res.body.toString()}`);
        else assert.equal(comparable(res), expected.get(r.name), `${r.name} #${i}`);
      });
      if (got.length < sent.length) assert.ok(answer.closedByServer, `${got.length} of ${sent.length} answered and the connection left open`);
      for (const [i, r] of sent.entries()) {
        if (r.name === 'register') assert.equal(await registered(r.id), i < got.length, `registration #${i} applied ${i < got.length ? 'with' : 'without'} its answer`);
      }
    }), 40);
  });

  it('a change followed by another request in the same read is not applied when uWS closes the connection', async () => {
    const answer = await exchange(svc.port, [Buffer.concat([register('same-read'), quick.notFound!()])], { idleMs: CLOSED_AT_ONCE_MS });
    // uWS closes the connection as soon as it parses a request behind one still unanswered.
    assert.deepEqual(answer.responses.map((r) => r.status), []);
    assertClosedAtOnce(answer);
    assert.equal(await registered('same-read'), false);
    // So the client's retry is a first registration, not a 409.
    const retry = await exchange(svc.port, [register('same-read')], { expect: 1 });
    assert.deepEqual(retry.responses.map((r) => r.status), [200]);
  });

  it('status updates with a token checked before: GETs pipeline in one read, changes only in separate reads (docs/security.md)', async () => {
    const list = (): Buffer => keepAliveRequest('GET', '/api/device/list', [['Authorization', `Bearer ${admin}`]]);
    const status = (value: string): Buffer =>
      keepAliveRequest('PUT', `/api/device/${device.id}/status`, [['Content-Type', 'application/json'], ['Authorization', `Bearer ${device.token}`]], json({ status: value }));
    const current = async (): Promise<string> => {
      const res = await call(svc.url, 'GET', '/api/device/list', { token: admin });
      return (res.json as { devices: Array<{ id: string; status: string }> }).devices.find((d) => d.id === device.id)!.status;
    };
    // Both tokens checked once, so that neither answer below waits for a first check.
    await exchange(svc.port, [status('before')], { expect: 1 });
    assert.equal(await current(), 'before');
    const reads = await exchange(svc.port, [Buffer.concat(Array.from({ length: 10 }, list))], { expect: 10 });
    assert.deepEqual(reads.responses.map((r) => r.status), Array(10).fill(200));
    const together = await exchange(svc.port, [Buffer.concat([status('first'), status('second')])], { idleMs: CLOSED_AT_ONCE_MS });
    assert.deepEqual(together.responses.map((r) => r.status), []);
    assertClosedAtOnce(together);
    assert.equal(await current(), 'before');
    const apart = await exchange(svc.port, [status('first'), status('second')], { gapMs: 100, expect: 2 });
    assert.deepEqual(apart.responses.map((r) => r.status), [200, 200]);
    assert.equal(await current(), 'second');
  });

  it('two changes in one read behind a slow answer: the slow one is answered, neither change applied', async () => {
    const answer = await exchange(svc.port, [slowStart(), Buffer.concat([register('queued-1'), register('queued-2')])], { gapMs: 200 });
    assert.deepEqual(answer.responses.map((r) => r.status), [502]);
    assert.ok(answer.closedByServer);
    assert.equal(await registered('queued-1'), false);
    assert.equal(await registered('queued-2'), false);
  });
});
