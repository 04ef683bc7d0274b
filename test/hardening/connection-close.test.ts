// `Connection: close` among other options (RFC 9112 section 9.6: a server that receives it must close
// after its answer). uWS honoured only a lone `close` (any five characters, in fact): `keep-alive,
// close` and LWP's `TE, close` kept the connection open until the idle timeout, and a client reading to
// its end waited ~10 s. The hub's negotiate route honours it the same way. Every closing answer says `Connection: close`
// (RFC 9112 section 9.6, as Kestrel does): uWS leaves it out when it read the request as a close itself,
// which it does for any first Connection line of five characters. A real service on loopback, raw sockets.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { exchange } from '../support/raw-http.js';
import { spawnService, type SpawnedService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

/** The Connection header lines of the answer's head. */
const connectionLines = (answer: string): string[] =>
  [...answer.slice(0, answer.indexOf('\r\n\r\n')).matchAll(/\r\nConnection:[ \t]*([^\r]*)/gi)].map((m) => m[1]!);

const LIST = (connection: string): string => `GET /api/device/list HTTP/1.1\r\nHost: x\r\nConnection: ${connection}\r\n\r\n`;
const NEGOTIATE = (connection: string): string => `POST /voice-hub/negotiate?negotiateVersion=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: ${connection}\r\n\r\n`;
/** Written once the first answer is whole: a connection the server kept open answers it too. */
const PROBE = Buffer.from('GET /api/device/list HTTP/1.1\r\nHost: x\r\n\r\n', 'latin1');

/**
 * Sends one request and, once it is answered, a second one on the same connection (raw-http's stepwise
 * exchange): the server closed if the connection ends, and kept it open if the second is answered too.
 * No short timer decides (a loaded machine may take any time to answer); the server's idle timeout is
 * far off, as the probe goes out the moment the first answer is read. `answer` is the first answer; a
 * HEAD answer's Content-Length has no body behind it, so it stays unsplit, in `rest`.
 */
async function exchangeWithProbe(port: number, request: string): Promise<{ closedByServer: boolean; answer: string }> {
  const result = await exchange(port, [Buffer.from(request, 'latin1'), PROBE], { stepwise: true, expect: 2 });
  return { closedByServer: result.closedByServer, answer: (result.responses[0]?.raw ?? result.rest).toString('latin1') };
}

describe('Connection: close as one option among others', () => {
  let svc: SpawnedService;
  before(async () => {
    // The built bundle, as users run it.
    svc = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '']);
  });
  after(async () => {
    svc.proc.kill('SIGTERM');
    await svc.exited;
  });

  // `abcde`: not a close, but uWS takes it for one (five characters), so the answer says it closes.
  for (const connection of ['close', 'Close', 'keep-alive, close', 'close, keep-alive', 'TE, close', 'close,TE', 'upgrade ,\tCLOSE ', 'abcde']) {
    it(`"${connection}": answered with Connection: close, then closed by the server`, async () => {
      const { closedByServer, answer } = await exchangeWithProbe(svc.port, LIST(connection));
      assert.match(answer, /^HTTP\/1\.1 401 Unauthorized\r\n/);
      assert.deepEqual(connectionLines(answer), ['close'], answer);
      assert.equal(closedByServer, true, answer);
    });

    it(`"${connection}" on the hub's negotiate: answered with Connection: close, then closed by the server`, async () => {
      const { closedByServer, answer } = await exchangeWithProbe(svc.port, NEGOTIATE(connection));
      assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
      assert.deepEqual(connectionLines(answer), ['close'], answer);
      assert.equal(closedByServer, true, answer);
    });
  }

  it('an ill-framed request with "Connection: close": the 400 says Connection: close, then closed', async () => {
    const { closedByServer, answer } = await exchangeWithProbe(svc.port, 'GET /api/device/list HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\nContent-Length: 1\r\n\r\nx');
    assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.deepEqual(connectionLines(answer), ['close'], answer);
    assert.equal(closedByServer, true, answer);
  });

  it('HEAD with "Connection: close": one Connection: close, no body', async () => {
    const { closedByServer, answer } = await exchangeWithProbe(svc.port, 'HEAD /api/device/list HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    assert.deepEqual(connectionLines(answer), ['close'], answer);
    assert.ok(answer.endsWith('\r\n\r\n'), answer);
    assert.equal(closedByServer, true, answer);
  });

  for (const connection of ['keep-alive', 'TE', 'closed', 'x-close']) {
    it(`"${connection}": the connection stays open`, async () => {
      const { closedByServer, answer } = await exchangeWithProbe(svc.port, LIST(connection));
      assert.match(answer, /^HTTP\/1\.1 401 Unauthorized\r\n/);
      assert.deepEqual(connectionLines(answer), []);
      assert.equal(closedByServer, false);
    });

    it(`"${connection}" on the hub's negotiate: the connection stays open`, async () => {
      const { closedByServer, answer } = await exchangeWithProbe(svc.port, NEGOTIATE(connection));
      assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
      assert.doesNotMatch(answer, /\r\nConnection: close\r\n/);
      assert.equal(closedByServer, false);
    });
  }
});
