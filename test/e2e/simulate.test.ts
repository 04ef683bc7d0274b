// `voice-hub simulate` (src/cli/simulate.ts) against the whole service and the echo voice server on
// loopback: every packet comes back, the service's own count agrees, devices are cleaned up (or the user
// is told they were not), and a run that cannot register every device fails with a hint.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { CliExit, EXIT_USAGE } from '../../src/cli/load.js';
import { formatSimulationReport, percentile, runSimulation, simulateCommand, type SimulationReport } from '../../src/cli/simulate.js';
import { simPackets } from '../../src/cli/sim-packets.js';
import { opusPacketDurationMs } from '../../src/voice/opus/packet.js';
import { call } from '../support/http.js';
import { copyBuild, runBundle, runProcess } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { freePort } from '../support/ports.js';
import { adminToken } from '../support/tokens.js';
import { startVoiceRig, type VoiceRig } from '../support/voice.js';
import { referenceDecode } from '../voice/helpers.js';

describe('percentile (nearest rank)', () => {
  const cases: [number[], number, number | undefined][] = [
    [[], 50, undefined],
    [[7], 99, 7],
    [[1, 2, 3, 4], 50, 2],
    [[1, 2, 3, 4], 99, 4],
    [Array.from({ length: 100 }, (_, i) => i + 1), 99, 99],
    [Array.from({ length: 1000 }, (_, i) => i + 1), 50, 500],
  ];
  for (const [values, p, expected] of cases) {
    it(`p${p} of ${values.length} values is ${expected}`, () => assert.equal(percentile(values, p), expected));
  }
});

it('the embedded packets are 50 x 20 ms of real 16 kHz mono Opus that libopus decodes', () => {
  const packets = simPackets();
  assert.equal(packets.length, 50);
  assert.ok(packets.every((p) => opusPacketDurationMs(p) === 20));
  const pcm = referenceDecode(packets, 16000, 1);
  assert.ok(pcm.every((b) => b.length === 320 * 2));
  const peak = Math.max(...pcm.map((b) => Math.max(...new Int16Array(b.buffer, b.byteOffset, b.length / 2).map(Math.abs))));
  assert.ok(peak > 1000, `speech, not silence (peak ${peak})`);
});

describe('simulate against the service and the echo server', () => {
  let rig: VoiceRig;
  let admin: string;
  before(async () => {
    rig = await startVoiceRig();
    admin = await adminToken(rig.svc);
  });

  it('3 devices x 2 s (JSON): nothing lost, the service counted every packet, the devices are deleted', async () => {
    const lines: string[] = [];
    const report = await runSimulation({ url: rig.svc.url, devices: 3, seconds: 2, adminToken: admin, log: (l) => lines.push(l) });
    assert.deepEqual(report.failures, []);
    assert.deepEqual(report.packets, { due: 3 * 100, heldBack: 0, processed: 300, refused: 0, lost: 0, duplicated: 0, late: 0 });
    assert.deepEqual(report.responses, { expected: 300, received: 300, answered: 300, lost: 0, duplicated: 0, late: 0 });
    assert.equal(report.audioResponse, 300);
    assert.equal(report.reconnects, 0);
    assert.equal(report.serverPackets, 300, 'audioPacketsSent of the final session records');
    assert.deepEqual(report.errors, []);
    assert.ok(report.p50Ms !== undefined && report.p99Ms !== undefined && report.p50Ms <= report.p99Ms);
    assert.equal(report.ok, true);
    assert.deepEqual(report.leftRegistered, []);
    const list = await call(rig.svc.url, 'GET', '/api/device/list', { token: admin });
    assert.deepEqual(list.json.devices.filter((d: { id: string }) => d.id.startsWith('sim-')), [], 'simulated devices deleted');
    assert.deepEqual(rig.svc.app.sessions.list(), [], 'sessions stopped');

    const text = formatSimulationReport(report);
    assert.match(text, /^ +expected {2}arrived {2}lost {2}duplicated {2}late$/m);
    assert.match(text, /^packets +300 +300 +0 +0 +0$/m);
    assert.match(text, /^responses +300 +300 +0 +0 +0$/m);
    assert.match(text, /round trip .*: p50 \d+\.\d ms, p99 \d+\.\d ms, max \d+\.\d ms/);
    assert.match(text, /^3 simulated device\(s\) deleted$/m);
    assert.match(text, /result: OK/);
  });

  it('MessagePack without an admin token: nothing lost, and the output says the devices stay registered', async () => {
    const { code, text } = await simulateCommand({ url: rig.svc.url, devices: 2, seconds: 1, protocol: 'messagepack' });
    assert.equal(code, 0, text);
    assert.match(text, /messagepack protocol/);
    assert.match(text, /no --admin-token: the 2 simulated device\(s\) \(sim-[0-9a-f]{6}-1\.\.\.\) stay registered and count against DeviceManagement\.MaxDevices/);
    const list = await call(rig.svc.url, 'GET', '/api/device/list', { token: admin });
    const left = list.json.devices.filter((d: { id: string }) => d.id.startsWith('sim-'));
    assert.equal(left.length, 2);
    for (const d of left) assert.equal((await call(rig.svc.url, 'DELETE', `/api/device/${d.id}`, { token: admin })).status, 200);
  });

  // The shipped forms are a bundle and SEA executables, where the client's own runtime `require('ws')`
  // finds nothing, and the client is a part of the program (parts/signalr-client.cjs) loaded by the
  // command: the build as build.mjs lays it out, run from a folder with no node_modules above it.
  it('the build run away from node_modules: the simulator still streams with the official client', async () => {
    const dir = copyBuild();
    for (const protocol of ['json', 'messagepack']) {
      const args = [path.join(dir, 'voice-hub.cjs'), 'simulate', '--url', rig.svc.url, '--devices', '2', '--seconds', '1', '--protocol', protocol, '--admin-token', admin];
      const { code, stdout, stderr } = await runProcess(process.execPath, args, { cwd: dir, timeoutMs: 30_000 });
      assert.equal(code, 0, stdout + stderr);
      assert.match(stdout, /^packets +100 +100 +0 +0 +0$/m);
    }
  });

  /** What must hold in any report, drops or not: every counter accounted for exactly once. */
  function assertConsistent(report: SimulationReport): void {
    const { packets: p, responses: q } = report;
    assert.equal(p.due, p.processed + p.refused + p.lost, 'packets: expected = arrived + refused + lost');
    assert.ok(p.heldBack <= p.lost, 'held-back packets are lost packets');
    assert.equal(q.expected, report.serverPackets, 'responses expected = what the service forwarded');
    assert.equal(q.lost, q.expected - q.answered, 'responses: lost = expected - arrived');
    assert.equal(q.received, q.answered + q.duplicated, 'responses: received = arrived + duplicated');
    assert.equal(report.audioResponse, q.received, 'one AudioResponse per AudioData');
    assert.ok(p.processed <= report.serverPackets!, 'the device cannot hear of more than the service processed');
    assert.ok(report.serverPackets! <= p.due - p.heldBack - p.refused, 'the service processed nothing twice');
  }

  it('3 devices x 6 s, every connection dropped every 2 s for 500 ms: counters add up, only packets due while cut off are lost', async () => {
    const lines: string[] = [];
    const report = await runSimulation({
      url: rig.svc.url, devices: 3, seconds: 6, dropEverySeconds: 2, dropForMs: 500, adminToken: admin, log: (l) => lines.push(l),
    });
    const text = formatSimulationReport(report);
    assert.deepEqual(report.failures, [], text);
    assert.deepEqual(report.drops, { everySeconds: 2, forMs: 500, count: 2 });
    assert.equal(lines.filter((l) => /^drop \d: cutting every hub connection, new ones wait 500 ms$/.test(l)).length, 2);
    assert.equal(report.reconnects, 3 * 2, 'each device reconnected after each drop');
    assertConsistent(report);
    const { packets: p, responses: q } = report;
    assert.equal(p.due, 3 * 300);
    // Each outage holds each device back for at least most of its 500 ms (25 packets).
    assert.ok(p.heldBack >= 3 * 2 * 15, `held back ${p.heldBack}`);
    // Beyond those, a drop costs a device only what it sent before it noticed the cut, or what was answered
    // while it was away: a few packets on an idle machine (test/e2e/hub-reconnect.test.ts pins it exactly);
    // bounded here by half a second's worth (25) per drop, for a loaded one.
    assert.ok(p.lost - p.heldBack <= 3 * 2 * 25, `lost ${p.lost}, held back ${p.heldBack}`);
    assert.ok(q.lost <= 3 * 2 * 25, `responses lost ${q.lost}`);
    assert.equal(p.duplicated, 0);
    assert.equal(q.duplicated, 0);
    assert.equal(report.ok, false, 'something was lost');
    assert.match(text, /\(json protocol, every connection dropped every 2 s for 500 ms \(2 drops\)\)/);
    assert.match(text, /^6 reconnect\(s\); \d+ packet\(s\) held back while a device was not in its session \(counted lost\)$/m);
    assert.match(text, new RegExp(`^packets +900 +${p.processed} +${p.lost} +0 +${p.late}$`, 'm'));
    assert.match(text, /^result: FAILED \(\d+ lost, 0 duplicated, 0 device\(s\) failed\)$/m);
    assert.deepEqual(report.leftRegistered, []);
  });

  it('with --stateful-reconnect a drop loses, repeats and holds back nothing', async () => {
    const report = await runSimulation({
      url: rig.svc.url, devices: 2, seconds: 3, protocol: 'messagepack', dropEverySeconds: 1.5, dropForMs: 300, statefulReconnect: true, adminToken: admin,
    });
    assert.deepEqual(report.failures, [], formatSimulationReport(report));
    assert.equal(report.statefulReconnect, true);
    assert.equal(report.drops?.count, 1);
    assertConsistent(report);
    assert.equal(report.packets.duplicated + report.responses.duplicated, 0);
    assert.deepEqual({ lost: report.packets.lost, heldBack: report.packets.heldBack, responsesLost: report.responses.lost }, { lost: 0, heldBack: 0, responsesLost: 0 });
    assert.equal(report.ok, true, formatSimulationReport(report));
    assert.match(formatSimulationReport(report), /stateful reconnect asked for\)$/m);
  });

  it('bad options are refused before anything is registered', async () => {
    // Bad usage, as the command line's own checks say it (exit 64), not a run that failed.
    const usage = (message: string) => new CliExit(EXIT_USAGE, [`voice-hub simulate: ${message}`, `Run 'voice-hub simulate --help' for usage.`]);
    const refused: [Parameters<typeof simulateCommand>[0], string][] = [
      [{ url: rig.svc.url, devices: 0, seconds: 1 }, '--devices must be a whole number from 1 to 500'],
      [{ url: rig.svc.url, devices: 1, seconds: 0 }, '--seconds must be more than 0 and at most 86400, not 0'],
      [{ url: rig.svc.url, devices: 1, seconds: 1, dropForMs: 100 }, '--drop-for needs --drop-every'],
      [{ url: rig.svc.url, devices: 1, seconds: 1, dropEverySeconds: 0 }, '--drop-every must be more than 0 seconds'],
      [{ url: rig.svc.url, devices: 1, seconds: 1, dropEverySeconds: 1, dropForMs: 1000 }, '--drop-for must be from 0 to less than --drop-every (in ms)'],
      [{ url: rig.svc.url, devices: 1, seconds: 1, dropEverySeconds: 1, dropForMs: -1 }, '--drop-for must be from 0 to less than --drop-every (in ms)'],
      [{ url: rig.svc.url, devices: 1, seconds: 1, lateMs: 0 }, '--late-after must be more than 0 ms'],
    ];
    for (const [options, message] of refused) {
      await assert.rejects(simulateCommand(options), usage(message), message);
    }
    const list = await call(rig.svc.url, 'GET', '/api/device/list', { token: admin });
    assert.deepEqual(list.json.devices.filter((d: { id: string }) => d.id.startsWith('sim-')), []);
  });
});

it('the built CLI declares the drop options and defines every counter in simulate --help', async () => {
  const { code, stdout } = await runBundle(['simulate', '--help']);
  assert.equal(code, 0);
  for (const flag of ['--drop-every', '--drop-for', '--stateful-reconnect', '--late-after']) assert.ok(stdout.includes(flag), flag);
  assert.match(stdout, /^ {2}duplicated {2}an AudioProcessed for a sequence already seen/m);
  assert.match(stdout, /^ {2}late {8}matched more than --late-after ms after its packet was sent\.$/m);
  const bad = await runBundle(['simulate', '--drop-for', '100']);
  assert.deepEqual({ code: bad.code, stderr: bad.stderr }, {
    code: 64,
    stderr: "voice-hub simulate: --drop-for needs --drop-every\nRun 'voice-hub simulate --help' for usage.\n",
  });
});

it('more devices than MaxDevices allows: the run fails (exit 1) and says how to raise the limit', async () => {
  const { svc } = await startVoiceRig({ flags: { 'DeviceManagement.MaxDevices': 2 } });
  const admin = await adminToken(svc);
  const report = await runSimulation({ url: svc.url, devices: 3, seconds: 0.5, adminToken: admin });
  assert.equal(report.failures.length, 1);
  assert.match(report.failures[0]!.reason, /^POST \/api\/device\/register: HTTP 409 The maximum number of devices \(2\) is registered\.$/);
  assert.equal(report.packets.due, 2 * 25, 'the two registered devices still streamed');
  assert.equal(report.packets.lost, 0);
  assert.equal(report.ok, false);
  assert.deepEqual(report.leftRegistered, []);
  const text = formatSimulationReport(report);
  assert.match(text, /raise it \(--DeviceManagement\.MaxDevices 100\)/);
  assert.match(text, /result: FAILED \(0 lost, 0 duplicated, 1 device\(s\) failed\)/);
});

it('nothing listening at --url: the run fails, and says nothing of devices left registered (none could be)', async () => {
  const port = await freePort();
  const report = await runSimulation({ url: `http://127.0.0.1:${port}`, devices: 2, seconds: 0.5 });
  assert.equal(report.failures.length, 2);
  assert.match(report.failures[0]!.reason, /^POST http:\/\/127\.0\.0\.1:\d+\/api\/device\/register: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
  assert.deepEqual(report.leftRegistered, []);
  assert.doesNotMatch(formatSimulationReport(report), /stay registered/);
});

// A port browsers block is asked like any other (test/e2e/tool-requests.test.ts).
it('a --url the request never left for (a server that speaks no TLS): nothing said of devices left registered', async () => {
  const plain = createServer((_req, res) => res.end());
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  try {
    const report = await runSimulation({ url: `https://127.0.0.1:${(plain.address() as AddressInfo).port}`, devices: 1, seconds: 0.5 });
    assert.match(report.failures[0]!.reason, /^POST https:\/\/127\.0\.0\.1:\d+\/api\/device\/register: .*wrong version number/);
    assert.deepEqual(report.leftRegistered, []);
    assert.doesNotMatch(formatSimulationReport(report), /stay registered/);
  } finally {
    plain.close();
  }
});

it('a 2xx answer without the fields the simulator needs (another program, a proxy page) fails the device with what was missing, not a TypeError', async () => {
  // First registration answers as voice-hub would and the session start lacks its websocketUrl; then
  // every path answers another program's JSON.
  let voiceHubLike = true;
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (voiceHubLike && req.url === '/api/device/register') res.end(JSON.stringify({ deviceId: 'x', deviceToken: 'token' }));
    else if (voiceHubLike && req.url === '/api/voice/start') res.end(JSON.stringify({ sessionId: 's-1' }));
    else res.end('{"status":"Healthy"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const report = await runSimulation({ url, devices: 1, seconds: 0.5 });
    assert.deepEqual(report.failures.map((f) => f.reason), [
      'POST /api/voice/start: HTTP 200 without websocketUrl (a string): not an answer of voice-hub: {"sessionId":"s-1"}',
    ]);
    voiceHubLike = false;
    const other = await runSimulation({ url, devices: 1, seconds: 0.5 });
    assert.deepEqual(other.failures.map((f) => f.reason), [
      'POST /api/device/register: HTTP 200 without deviceToken (a string): not an answer of voice-hub: {"status":"Healthy"}',
    ]);
  } finally {
    server.close();
  }
});

it('--url with a path (a service behind a reverse proxy at /hub/): the API is asked under that path, as health asks for /hub/health', async () => {
  const asked: string[] = [];
  const server = createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    res.writeHead(404, { 'content-type': 'application/problem+json' }).end('{"title":"Not Found","status":404}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as AddressInfo).port;
    for (const url of [`http://127.0.0.1:${port}/hub`, `http://127.0.0.1:${port}/hub/`]) {
      asked.length = 0;
      const report = await runSimulation({ url, devices: 1, seconds: 0.5 });
      assert.deepEqual(report.failures.map((f) => f.reason), ['POST /api/device/register: HTTP 404 Not Found']);
      assert.deepEqual(asked, ['POST /hub/api/device/register']);
    }
  } finally {
    server.close();
  }
});

// A query of --url (where an access token travels) was repeated in the report and on stderr; then it was
// dropped from every request without a word (each path was resolved against the address). Now it is bad
// usage, and still not repeated.
describe('simulate --url with a query', () => {
  it('is bad usage (64), the query not quoted', async () => {
    const port = await freePort();
    const res = await runBundle(['simulate', '--url', `http://127.0.0.1:${port}/?access_token=HUNTER2x`, '--seconds', '1']);
    assert.equal(res.code, 64, res.stderr);
    assert.equal(res.stdout, '');
    assert.equal(res.stderr.split('\n')[0], "voice-hub simulate: --url must be the service's base address, without a query or a fragment (each request adds its own path)");
    assert.doesNotMatch(res.stderr, /HUNTER2x/);
  });
});

// `simulate --admin-token <invalid>` said `could not delete 1 simulated device(s)` and `result: OK`, exit 0,
// the 401 only on stderr, the device left counting against MaxDevices; a registration refused with 401 was
// followed by `simulated devices deleted`, of devices never registered.
describe('simulate: devices left registered fail the run, with why; no deletion is claimed that did not happen', () => {
  let rig: VoiceRig;
  before(async () => {
    rig = await startVoiceRig({ flags: { 'ApiKeys.0': 'key-for-the-test-0123' } });
  });

  it('an admin token the service refuses: exit 1, the device named with the refusal, FAILED', async () => {
    const res = await runBundle(['simulate', '--url', rig.svc.url, '--seconds', '1', '--api-key', 'key-for-the-test-0123', '--admin-token', 'not-a-token']);
    assert.equal(res.code, 1, res.stdout + res.stderr);
    const lines = res.stdout.trim().split('\n');
    const id = /^could not delete 1 simulated device\(s\) \((sim-[0-9a-f]{6}-1)\): /.exec(lines.at(-3)!)?.[1];
    assert.ok(id, res.stdout);
    assert.match(lines.at(-3)!, /\): HTTP 401 /);
    assert.equal(lines.at(-2), '1 simulated device(s) stay registered and count against DeviceManagement.MaxDevices (10 as shipped); ' +
      'delete them with DELETE /api/device/<id> and an admin token (voice-hub token admin)');
    assert.equal(lines.at(-1), 'result: FAILED (0 lost, 0 duplicated, 0 device(s) failed, 1 device(s) left registered)');
    assert.doesNotMatch(res.stdout, /deleted/);
    const list = await call(rig.svc.url, 'GET', '/api/device/list', { token: await adminToken(rig.svc) });
    assert.deepEqual(list.json.devices.map((d: { id: string }) => d.id), [id], 'the device is still there');
  });

  it('a registration refused (401): nothing to delete, and no deletion claimed', async () => {
    const res = await runBundle(['simulate', '--url', rig.svc.url, '--seconds', '1', '--admin-token', await adminToken(rig.svc)]);
    assert.equal(res.code, 1, res.stdout + res.stderr);
    const lines = res.stdout.trim().split('\n');
    assert.match(lines.at(-3)!, /^device sim-[0-9a-f]{6}-1 failed: POST \/api\/device\/register: HTTP 401/);
    assert.equal(lines.at(-2), 'no simulated device was registered: nothing to delete');
    assert.equal(lines.at(-1), 'result: FAILED (0 lost, 0 duplicated, 1 device(s) failed)');
  });
});
