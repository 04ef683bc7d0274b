// websocketUrl is built from a validated Host, never copied: POST /api/voice/start used to put any Host
// header verbatim into the URL it answers. Now a Host that is not a well-formed host[:port] is refused
// with host filtering's 400 before routing (as Kestrel refuses it, with `AllowedHosts: *` too), with
// `AllowedHosts` an unlisted one as well, and X-Forwarded-Proto other than http/https is a 400 problem;
// neither starts a session. Hostile values go over a raw socket, since fetch refuses to send most of them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { INVALID_HOST_TEXT } from '../../src/http/gate.js';
import { parseHost } from '../../src/host-names.js';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer, type EchoServer } from '../../src/upstream/echo-server.js';
import { call } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';
import { rawRequest } from '../support/raw-http.js';
import { UWS_MAX_HEAD_BYTES } from '../support/uws-addon.js';

let echo: EchoServer;

before(async () => {
  echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
});
after(async () => {
  await echo?.close();
});

async function serviceWith(flags: Record<string, unknown> = {}): Promise<{ svc: TestService; token: string; deviceId: string }> {
  const svc = await startService({
    flags: { 'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice`, 'Mqtt.BrokerAddress': '', 'DeviceManagement.MaxDevices': 1000, ...flags },
  });
  const reg = await call(svc.url, 'POST', '/api/device/register', { body: { deviceId: 'kitchen-1', deviceName: 'Kitchen', deviceType: 'speaker' } });
  assert.equal(reg.status, 200, reg.text);
  return { svc, token: reg.json.deviceToken, deviceId: 'kitchen-1' };
}

interface Answer {
  status: number | undefined;
  headers: Record<string, string>;
  body: string;
}

/** POST /api/voice/start with the Host (and extra header lines) written verbatim. */
async function startWith(ctx: { svc: TestService; token: string; deviceId: string }, host: string | Buffer | undefined, extra: string[] = []): Promise<Answer> {
  const body = JSON.stringify({ deviceId: ctx.deviceId, sessionConfig: { audioFormat: 'opus' } });
  const head = [
    'POST /api/voice/start HTTP/1.1',
    ...(host === undefined ? [] : [`Host: ${Buffer.isBuffer(host) ? host.toString('latin1') : host}`]),
    `Authorization: Bearer ${ctx.token}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...extra,
    'Connection: close',
    '',
    '',
  ].join('\r\n');
  // latin1 keeps raw bytes (a UTF-8 Host sent as its bytes) as they are.
  const answer = await rawRequest(ctx.svc.port, Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(body)]), 5000, 300);
  const [headText = '', ...rest] = answer.text.split('\r\n\r\n');
  const headers: Record<string, string> = {};
  for (const line of headText.split('\r\n').slice(1)) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  return { status: answer.statuses[0], headers, body: Buffer.from(rest.join('\r\n\r\n'), 'latin1').toString('utf8') };
}

/** Ids of the active sessions: a start, even one replacing the device's session, changes them. */
const sessionsStarted = async (ctx: { svc: TestService }): Promise<string[]> => ctx.svc.app.sessions.list().map((s) => s.id).sort();

const HOSTILE: Array<[what: string, host: string | Buffer]> = [
  ['a space', 'evil host'],
  ['a tab', 'pi.local\tx'],
  ['a double quote', 'pi.local"onload="x'],
  ['a single quote', "pi.local'x"],
  ['userinfo', 'user:pass@evil.com'],
  ['a bare @', 'pi.local@evil.com'],
  ['a path', 'evil.com/phish'],
  ['a query', 'evil.com?x=1'],
  ['a fragment', 'evil.com#x'],
  ['a backslash', 'evil.com\\x'],
  ['percent-encoding', 'evil%2ecom'],
  ['sub-delimiters', 'a,b;c=d'],
  ['two hosts in one value', 'pi.local, evil.com'],
  ['Unicode as UTF-8 bytes', Buffer.from('kitchen.例え.jp')],
  ['an empty label', 'pi..local'],
  ['a leading dot', '.pi.local'],
  ['a 64-character label', `${'a'.repeat(64)}.local`],
  ['a name over 253 characters', `${'a'.repeat(60)}.`.repeat(5) + 'local'],
  // Under Node 24 uWS answers any head over 4,096 bytes itself (431): the value must leave room for the rest.
  ['a very long value', 'a'.repeat(UWS_MAX_HEAD_BYTES === Infinity ? 8000 : 3000)],
  ['port 0', 'pi.local:0'],
  ['port 65536', 'pi.local:65536'],
  ['a six-digit port', 'pi.local:000080'],
  ['an empty port', 'pi.local:'],
  ['two ports', 'pi.local:80:80'],
  ['a named port', 'pi.local:http'],
  ['an unclosed IPv6 bracket', '[::1'],
  ['an IPv6 zone id', '[fe80::1%25eth0]'],
  ['IPvFuture', '[v1.fe80]'],
  ['IPv6 without brackets', 'fe80::1'],
  ['junk after the bracket', '[::1]x'],
  ['an IPv4 octet over 255', '192.168.1.256'],
  ['a hex IPv4 (read as 127.0.0.1 by URL parsers)', '0x7f.1'],
  ['a decimal IPv4', '2130706433'],
];

describe('POST /api/voice/start: hostile Host headers (AllowedHosts *)', () => {
  let ctx: Awaited<ReturnType<typeof serviceWith>>;
  before(async () => {
    ctx = await serviceWith();
  });

  for (const [what, host] of HOSTILE) {
    it(`${what}: 400 text/plain from host filtering, no session`, async () => {
      const before = await sessionsStarted(ctx);
      const answer = await startWith(ctx, host);
      assert.deepEqual(
        { status: answer.status, type: answer.headers['content-type'], body: answer.body },
        { status: 400, type: 'text/plain; charset=utf-8', body: INVALID_HOST_TEXT },
      );
      assert.deepEqual(await sessionsStarted(ctx), before);
    });
  }

  it('CR/LF cannot smuggle text into the URL: a second header line is a header of its own', async () => {
    const answer = await startWith(ctx, 'pi.local', ['X-Evil: /voice-hub?evil']);
    assert.equal(answer.status, 200, answer.body);
    assert.equal(JSON.parse(answer.body).websocketUrl, 'ws://pi.local/voice-hub');
  });

  const ACCEPTED: Array<[host: string, url: string]> = [
    ['pi.local', 'ws://pi.local/voice-hub'],
    ['PI.Local:5000', 'ws://pi.local:5000/voice-hub'],
    ['pi.local.', 'ws://pi.local./voice-hub'],
    ['voice_hub-1.home.arpa:80', 'ws://voice_hub-1.home.arpa:80/voice-hub'],
    ['192.168.1.20:5000', 'ws://192.168.1.20:5000/voice-hub'],
    ['[FE80::1]:8080', 'ws://[fe80::1]:8080/voice-hub'],
    ['[0:0::FFFF:192.168.1.20]', 'ws://[::ffff:c0a8:114]/voice-hub'], // IPv6 in its canonical text
    ['xn--bcher-kva.example', 'ws://xn--bcher-kva.example/voice-hub'],
    [`${'a'.repeat(63)}.local`, `ws://${'a'.repeat(63)}.local/voice-hub`],
  ];
  for (const [host, url] of ACCEPTED) {
    it(`a well-formed Host ${JSON.stringify(host.slice(0, 30))} is used, normalised: ${url.slice(0, 40)}`, async () => {
      const answer = await startWith(ctx, host);
      assert.equal(answer.status, 200, answer.body);
      assert.equal(JSON.parse(answer.body).websocketUrl, url);
    });
  }

  it('an empty Host names the listening address', async () => {
    const answer = await startWith(ctx, '');
    assert.equal(answer.status, 200, answer.body);
    assert.equal(JSON.parse(answer.body).websocketUrl, `ws://127.0.0.1:${ctx.svc.port}/voice-hub`);
  });

  // uWS takes bytes 0x80-0xFF at either end of a header value for white space and trims them before the
  // service sees the value (docs/security.md, "A limit we cannot see past"): both addons, checked here
  // so that an addon that stops doing it, or trims more, shows up.
  it('bytes 0x80-0xFF at the ends of a Host are trimmed by uWS; what is left is checked as any Host', async () => {
    const trimmed = await startWith(ctx, Buffer.concat([Buffer.from('é'), Buffer.from('vil.com'), Buffer.from([0xa0])]));
    assert.equal(trimmed.status, 200, trimmed.body);
    assert.equal(JSON.parse(trimmed.body).websocketUrl, 'ws://vil.com/voice-hub');
    const nothingLeft = await startWith(ctx, Buffer.from('ＡＢ'));
    assert.equal(nothingLeft.status, 200, nothingLeft.body);
    assert.equal(JSON.parse(nothingLeft.body).websocketUrl, `ws://127.0.0.1:${ctx.svc.port}/voice-hub`);
  });

  it('X-Forwarded-Proto: http or https (any case, first of a list) picks the scheme; anything else is a 400 problem and starts nothing', async () => {
    for (const [proto, url] of [['https', 'wss://pi.local/voice-hub'], ['HTTPS, http', 'wss://pi.local/voice-hub'], ['http', 'ws://pi.local/voice-hub']] as const) {
      const answer = await startWith(ctx, 'pi.local', [`X-Forwarded-Proto: ${proto}`]);
      assert.equal(answer.status, 200, answer.body);
      assert.equal(JSON.parse(answer.body).websocketUrl, url, proto);
    }
    for (const proto of ['wss', 'javascript', 'https://evil.com', 'ftp, https', '']) {
      const before = await sessionsStarted(ctx);
      const answer = await startWith(ctx, 'pi.local', [`X-Forwarded-Proto: ${proto}`]);
      assert.equal(answer.status, 400, `${proto}: ${answer.body}`);
      assert.equal(answer.headers['content-type'], 'application/problem+json');
      const { traceId, ...problem } = JSON.parse(answer.body);
      assert.match(traceId, /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
      assert.deepEqual(problem, {
        type: 'https://tools.ietf.org/html/rfc9110#section-15.5.1',
        title: 'One or more validation errors occurred.',
        status: 400,
        detail: 'The X-Forwarded-Proto header cannot be used to address the hub.',
        errors: { 'X-Forwarded-Proto': ['must be http or https'] },
      }, proto);
      assert.deepEqual(await sessionsStarted(ctx), before, `${proto} started no session`);
    }
  });
});

describe('POST /api/voice/start with AllowedHosts configured', () => {
  it('an unlisted host is refused before routing; a listed one (any port) is what websocketUrl names', async () => {
    const ctx = await serviceWith({ AllowedHosts: 'pi.local;127.0.0.1' });
    const refused = await startWith(ctx, 'evil.example');
    assert.deepEqual([refused.status, refused.body], [400, INVALID_HOST_TEXT]);
    const listed = await startWith(ctx, 'PI.local:5000');
    assert.equal(listed.status, 200, listed.body);
    assert.equal(JSON.parse(listed.body).websocketUrl, 'ws://pi.local:5000/voice-hub');
  });
});

describe('parseHost', () => {
  it('whatever it accepts, a URL parser reads back as exactly that host and port, with the path intact', () => {
    const hostChars = fc.constantFrom(...'abcxyzAZ019-_.:[]@/?#%\\ "\'<>{}|^`~!$&()*+,;=\t\u00e9\u4f8b'.split(''));
    const arbitraryHost = fc.oneof(
      fc.string({ unit: hostChars, maxLength: 40 }),
      fc.string({ unit: 'binary', maxLength: 20 }),
      fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 70000 })).map(([ip, port]) => `${ip}:${port}`),
      fc.tuple(fc.ipV6(), fc.integer({ min: 0, max: 70000 })).map(([ip, port]) => `[${ip}]:${port}`),
      fc.domain(),
    );
    fc.assert(
      fc.property(arbitraryHost, (host) => {
        const parsed = parseHost(host);
        if (!parsed) return;
        assert.match(parsed.authority, /^[a-z0-9._:[\]-]+$/);
        const url = new URL(`ws://${parsed.authority}/voice-hub`);
        assert.equal(url.pathname, '/voice-hub');
        assert.equal(url.hostname, parsed.name);
        assert.equal(url.port === '' ? undefined : Number(url.port), parsed.port === 80 ? undefined : parsed.port);
        assert.equal(url.username + url.password + url.search + url.hash, '');
      }),
      { numRuns: 3000 },
    );
  });
});
