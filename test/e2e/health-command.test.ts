// `voice-hub health --url` against whatever answers at the address (src/cli/health.ts): any JSON, of any
// shape, gives exit 0-3 and never a stack trace; a health report of another writer (ASP.NET Core's
// UIResponseWriter leaves null fields out) is printed with the missing fields absent; an answer larger
// than any health report is not read to its end; a URL with credentials is refused without echoing them.
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { MAX_ANSWER_BYTES } from '../../src/cli/bounded-answer.js';
import { healthCommand, healthUrlFrom, localHealthUrl, printable } from '../../src/cli/health.js';
import { checkProperty } from '../hardening/property.js';
import { endlessAnswer } from '../support/endless-answer.js';
import { runBundle, startService } from '../support/service.js';
import { withTimeout } from '../support/wait.js';
import { freePort } from '../support/ports.js';
import os from 'node:os';
import v8 from 'node:v8';
import vm from 'node:vm';

/** A full garbage collection now (the flag is taken at run time: the suite runs without --expose-gc). */
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

/** A loopback server whose every answer is made by `answer`, swapped per case. */
let answer: (res: ServerResponse) => void = (res) => res.end();
let server: Server;
let base: string;
before(async () => {
  server = createServer((_req, res) => answer(res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

const json = (body: string, status = 200) => (res: ServerResponse): void => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(body);
};

const STATUSES = ['Healthy', 'Degraded', 'Unhealthy'] as const;
// A Map, not an object literal: a status of `toString` must not find Object.prototype's function.
const EXIT_FOR = new Map<string, number>([['Healthy', 0], ['Degraded', 1], ['Unhealthy', 2]]);

/** The rule the command keeps: a health report is an object with a known status and an object of entries. */
function expectedExit(value: unknown): number {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(value) || !isObject(value.entries) || typeof value.status !== 'string') return 3;
  return EXIT_FOR.get(value.status) ?? 3;
}

/** Each field of an entry or report either of its type or any JSON at all, or missing. */
const field = <T>(right: fc.Arbitrary<T>): fc.Arbitrary<unknown> => fc.oneof(right, fc.jsonValue({ maxDepth: 2 }));
const entry = fc.record({
  status: field(fc.constantFrom(...STATUSES)),
  description: field(fc.string({ unit: 'binary' })),
  duration: field(fc.constantFrom('00:00:00.0010000', '1.02:03:04', 'soon')),
  exception: field(fc.string()),
  data: field(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 1 }))),
  tags: field(fc.array(fc.string())),
}, { requiredKeys: [] });
const report = fc.record({
  status: field(fc.constantFrom(...STATUSES)),
  totalDuration: field(fc.constant('00:00:00.0012345')),
  entries: field(fc.dictionary(fc.string({ unit: 'binary' }), fc.oneof(entry, fc.jsonValue({ maxDepth: 1 })), { maxKeys: 6 })),
}, { requiredKeys: [] });
/** Mostly report-like bodies, some any JSON, some not JSON. */
const body = fc.oneof(
  { weight: 6, arbitrary: report.map((r) => ({ text: JSON.stringify(r), value: r as unknown })) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => ({ text: JSON.stringify(v) ?? '', value: v })) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }).map((text) => ({ text, value: notJson(text) })) },
);

function notJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

describe('health --url against any JSON', () => {
  it('never throws, exits 0-3 as the rule says, and prints no control character', async () => {
    await checkProperty(fc.asyncProperty(body, fc.constantFrom(200, 503, 404), async (b, status) => {
      answer = json(b.text, status);
      const { code, text } = await healthCommand(`${base}/health`, 5000);
      assert.equal(code, expectedExit(b.value), text);
      assert.doesNotMatch(text.replace(/\n/g, ''), /[\u0000-\u001f\u007f-\u009f]/);
      if (code < 3) assert.match(text, /^Overall: (Healthy|Degraded|Unhealthy) /);
      else assert.match(text, /without a voice-hub health report/);
    }), 300);
  });

  it('a UIResponseWriter report without descriptions, with a numeric duration: the table, the fields absent (the bundle)', async () => {
    answer = json(JSON.stringify({
      status: 'Degraded',
      totalDuration: '00:00:00.0012345',
      entries: {
        database: { data: {}, duration: '00:00:00.0010000', status: 'Healthy', tags: [] },
        mqtt: { data: {}, duration: 12.5, status: 'Degraded', tags: [] },
        odd: null,
      },
    }));
    const res = await runBundle(['health', '--url', base]);
    assert.deepEqual({ code: res.code, stderr: res.stderr }, { code: 1, stderr: '' });
    assert.equal(res.stdout, [
      'Overall: Degraded (1.2 ms)',
      '',
      'COMPONENT  STATUS    DURATION  DESCRIPTION',
      'database   Healthy   1.0 ms',
      'mqtt       Degraded  -',
      'odd        -         -',
      '',
    ].join('\n'));
  });

  it('a server of another kind (HTML, a bare status word, JSON of another shape): exit 3, on stderr, no stack', async () => {
    const answers: [string, (res: ServerResponse) => void][] = [
      ['html', (res) => { res.writeHead(200, { 'content-type': 'text/html' }); res.end('<!DOCTYPE html><p>hi'); }],
      ['text', (res) => res.end('Healthy')],
      ['actuator', json('{"status":"UP"}')],
      ['null entries', json('{"status":"Healthy","entries":null}')],
    ];
    for (const [what, a] of answers) {
      answer = a;
      const res = await runBundle(['health', '--url', base]);
      assert.equal(res.code, 3, `${what}: ${res.stdout}${res.stderr}`);
      assert.equal(res.stdout, '');
      assert.match(res.stderr, /^http:\/\/127\.0\.0\.1:\d+\/health answered HTTP 200( \([^)]*\))? without a voice-hub health report/, what);
      assert.doesNotMatch(res.stderr, /\n +at /, `${what}: a stack trace`);
    }
  });

  it('text from the answer reaches the terminal without escape sequences', () => {
    assert.equal(printable('ok\u001b]0;owned\u0007 \u202egnp.exe'), 'ok\\u001b]0;owned\\u0007 \\u202egnp.exe');
    assert.equal(printable('first line\r\n   second\tline\n'), 'first line second line');
  });
});

describe('health --url bounds what it reads', () => {
  it('an endless answer without Content-Length: exit 3 after reading 1 MiB, and the connection is dropped', async () => {
    const far = endlessAnswer();
    answer = far.answer;
    const started = Date.now();
    const { code, text } = await healthCommand(`${base}/health`, 10_000);
    assert.equal(code, 3);
    assert.match(text, /answered HTTP 200 with more than 1 MiB, far more than a voice-hub health report \(a few KB\): stopped reading/);
    assert.ok(Date.now() - started < 5000, 'it did not wait for the rest');
    const deadline = Date.now() + 2000;
    while (!far.closed() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.ok(far.closed(), 'the connection was dropped');
    // What the sockets' buffers held on top of the limit, not the 512 MiB the server would write.
    assert.ok(far.written() < MAX_ANSWER_BYTES + 32 * 1024 * 1024, `the server wrote ${far.written()} bytes`);
  });

  it('an answer that declares 400 MB: exit 3 without reading it', async () => {
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(400 * 1024 * 1024) });
      res.write('{"status":"Healthy","entries":{');
    };
    const { code, text } = await healthCommand(`${base}/health`, 10_000);
    assert.equal(code, 3);
    assert.match(text, /with more than 1 MiB/);
  });

  it('an answer that stops halfway: exit 3, said so', async () => {
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"status":"Healthy",');
      setTimeout(() => res.destroy(), 50);
    };
    const { code, text } = await healthCommand(`${base}/health`, 10_000);
    assert.equal(code, 3);
    assert.match(text, /^voice-hub is not reachable at http:\/\/127\.0\.0\.1:\d+\/health: the answer broke off: /);
  });

  // Node 20's AbortSignal.any() held its timeout weakly: after a garbage collection it never fired, and
  // a hung service (accepting, never answering) kept the command waiting for undici's own 300 s.
  for (const [name, hang] of [
    ['no answer at all', (): void => {}],
    ['half an answer head', (res: ServerResponse): void => void res.socket?.write('HTTP/1.1 200 OK\r\ncontent-type: appl')],
    ['a head and half a body', (res: ServerResponse): void => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"status":"Healthy",');
    }],
  ] as const) {
    it(`a server that hangs (${name}): exit 3 at the timeout, a garbage collection meanwhile or not`, async () => {
      // A server of its own: a connection pooled from the cases before could be the one that hangs.
      const hung = createServer((_req, res) => hang(res));
      await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
      after(() => {
        hung.closeAllConnections();
        hung.close();
      });
      const started = performance.now();
      const pending = healthCommand(`http://127.0.0.1:${(hung.address() as AddressInfo).port}/health`, 1500);
      await new Promise((r) => setTimeout(r, 300));
      collectGarbage();
      const { code, text } = await withTimeout(pending, 10_000, 'the health command');
      assert.equal(code, 3);
      assert.match(text, /^voice-hub is not reachable at http:\/\/127\.0\.0\.1:\d+\/health: (the answer broke off: )?no answer within 1\.5 s\n$/);
      assert.ok(performance.now() - started >= 1400, 'not before the timeout');
    });
  }
});

describe('health --url with a user name and password', () => {
  it('is bad usage (exit 64) and the password is never printed', async () => {
    answer = json('{"status":"Healthy","totalDuration":"00:00:00","entries":{}}');
    const url = base.replace('http://', 'http://tech:s3cr3t-pass@');
    const res = await runBundle(['health', '--url', url]);
    assert.deepEqual({ code: res.code, stdout: res.stdout }, { code: 64, stdout: '' });
    assert.equal(res.stderr, [
      `voice-hub health: --url must not hold a user name or password (/health asks for none): give ${base}/`,
      "Run 'voice-hub health --help' for usage.",
      '',
    ].join('\n'));
    assert.doesNotMatch(res.stderr, /s3cr3t/);
  });

  it('healthCommand itself never shows them either', async () => {
    const { code, text } = await healthCommand(`${base.replace('http://', 'http://u:s3cr3t@')}/health`, 5000);
    assert.equal(code, 0, text);
    assert.doesNotMatch(text, /s3cr3t/);
  });
});

// `health --url 'http://127.0.0.1:1/health?access_token=...'` repeated the whole address, token included.
describe('health --url with a query (where an access token travels): asked as given, named without it', () => {
  it('not reached, and reached with no report: scheme, host, port and path only', async () => {
    const port = await freePort();
    const gone = await runBundle(['health', '--url', `http://127.0.0.1:${port}/health?access_token=HUNTER2x`]);
    assert.equal(gone.code, 3, gone.stderr);
    assert.equal(gone.stderr, `voice-hub is not reachable at http://127.0.0.1:${port}/health: connect ECONNREFUSED 127.0.0.1:${port}\n`);
    answer = (res) => res.end('not a report');
    const other = await runBundle(['health', '--url', `${base}/health?access_token=HUNTER2x`]);
    assert.equal(other.code, 3, other.stderr);
    assert.equal(other.stderr, `${base}/health answered HTTP 200 without a voice-hub health report (JSON with a status of Healthy, Degraded or Unhealthy and its entries)\n`);
  });

  it('refused as bad usage, with credentials or unparsable: the query is not repeated either', async () => {
    const creds = await runBundle(['health', '--url', base.replace('http://', 'http://u:pw@') + '/health?access_token=HUNTER2x']);
    assert.equal(creds.code, 64);
    assert.equal(creds.stderr.split('\n')[0], `voice-hub health: --url must not hold a user name or password (/health asks for none): give ${base}/health`);
    const bad = await runBundle(['health', '--url', 'http:/[x?access_token=HUNTER2x']);
    assert.equal(bad.code, 64);
    assert.equal(bad.stderr.split('\n')[0], 'voice-hub health: --url needs an http:// or https:// address such as http://127.0.0.1:5000, not an address with a ? (not quoted: its query may hold a token)');
  });
});

describe('health against a service whose AllowedHosts does not list the name asked for', () => {
  it('exit 3 and says which setting refused it, not only that no report came', async () => {
    const service = await startService({ flags: { AllowedHosts: 'hub.example;*.lan' } });
    const res = await runBundle(['health', '--url', service.url]);
    assert.deepEqual(res, {
      code: 3,
      stdout: '',
      stderr: `${service.url}/health refused the host name 127.0.0.1: the service's AllowedHosts does not list it; ask with --url naming a listed host\n`,
    });
  });
});


/** A link-local IPv6 address of this machine with its interface (`fe80::...%eth0`), if it has one (loopback has none). */
function linkLocal(): string | undefined {
  for (const [name, addresses] of Object.entries(os.networkInterfaces())) {
    const found = addresses?.find((a) => a.family === 'IPv6' && a.address.startsWith('fe80:'));
    if (found) return `${found.address}%${name}`;
  }
  return undefined;
}

// A service on a link-local address (`Server.Host fe80::1%eth0`): `health` said "not reachable at
// (invalid URL): Invalid URL" (exit 3) of it, and `--url http://[fe80::1%25eth0]:5000` was bad usage
// (exit 64): Node's URL refuses any zone. The start-up line named `http://[fe80::1%eth0]:5000`, a URL
// without the `%25` RFC 6874 asks for.
describe('health of a service on a link-local IPv6 address (a zone: in a URL, [fe80::1%25eth0])', () => {
  it('the address asked keeps the zone, written %25', () => {
    assert.equal(localHealthUrl('fe80::1%eth0', 5000), 'http://[fe80::1%25eth0]:5000/health');
    assert.equal(healthUrlFrom('http://[FE80::1%25eth0]:5000'), 'http://[fe80::1%25eth0]:5000/health');
    assert.equal(healthUrlFrom('http://[fe80::1%25eth0]:5000/health'), 'http://[fe80::1%25eth0]:5000/health');
  });

  it('the start-up line names a usable URL, and health asks the service by it and by its configuration', { skip: linkLocal() === undefined && 'no link-local IPv6 address here' }, async () => {
    const host = linkLocal()!;
    const service = await startService({ flags: { 'Server.Host': host } });
    const url = `http://[${host.replace('%', '%25')}]:${service.port}`;
    assert.ok(service.logs.some((l) => l.endsWith(`listening on ${url}`)), service.logs.join('\n'));
    const configured = await runBundle(['health'], { Server__Host: host, Server__Port: String(service.port) });
    const given = await runBundle(['health', '--url', url]);
    // Unhealthy: no voice server listens at the test configuration's ServerUrl; the table is the service's report.
    for (const res of [configured, given]) {
      assert.deepEqual({ code: res.code, stderr: res.stderr }, { code: 2, stderr: '' });
      assert.match(res.stdout, /^Overall: Unhealthy .*\n\nCOMPONENT .*\nvoice-service +Unhealthy /);
    }
  });
});
