// 204 and 304 have no content and must not carry `Content-Length: 0` (RFC 9110 sections 8.6, 15.3.5,
// 15.4.5): uWS wrote it for every answer ended with a body, an empty one included. Raw sockets, so the
// header lines are what went on the wire, and a request pipelined behind each shows the connection
// still frames correctly after an answer without a length.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startService, type TestService } from '../support/service.js';

/** Writes `requests` at once; resolves with the raw answers once `count` status lines have come. */
function pipelined(port: number, requests: string, count: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`only this came:\n${data.slice(0, 500)}`));
    }, 5000);
    socket.on('data', (d) => {
      data += d.toString('latin1');
      if ((data.match(/^HTTP\/1\.1 \d{3} /gm) ?? []).length >= count && /\r\n\r\n[^]*$/.test(data) && data.endsWith('}')) {
        clearTimeout(timer);
        socket.destroy();
        resolve(data);
      }
    });
    socket.write(requests);
  });
}

const heads = (raw: string): string[][] => raw.split(/(?=^HTTP\/1\.1 )/m).map((answer) => answer.split('\r\n\r\n')[0]!.split('\r\n'));

describe('answers without content', () => {
  let svc: TestService;
  const origin = 'http://dashboard.local';
  before(async () => {
    svc = await startService({ env: { Cors__AllowedOrigins__0: origin } });
  });
  after(() => svc.stop());

  const list = 'GET /api/device/list HTTP/1.1\r\nHost: x\r\n\r\n';

  it('a CORS preflight 204: no Content-Length; the next request on the connection is answered', async () => {
    const preflight = `OPTIONS /api/device/list HTTP/1.1\r\nHost: x\r\nOrigin: ${origin}\r\nAccess-Control-Request-Method: GET\r\n\r\n`;
    const [first, second] = heads(await pipelined(svc.port, preflight + list, 2));
    assert.equal(first![0], 'HTTP/1.1 204 No Content');
    assert.deepEqual(first!.filter((l) => /^content-length:/i.test(l)), []);
    assert.equal(second![0], 'HTTP/1.1 401 Unauthorized');
  });

  it('a 304 for the OpenAPI document: no Content-Length; the next request on the connection is answered', async () => {
    // Without Accept-Encoding, as the raw request below: a gzip answer has an ETag of its own.
    const etag = (await fetch(`${svc.url}/swagger/v1/swagger.json`, { headers: { 'accept-encoding': 'identity' } })).headers.get('etag');
    assert.ok(etag);
    const conditional = `GET /swagger/v1/swagger.json HTTP/1.1\r\nHost: x\r\nIf-None-Match: ${etag}\r\n\r\n`;
    const [first, second] = heads(await pipelined(svc.port, conditional + list, 2));
    assert.equal(first![0], 'HTTP/1.1 304 Not Modified');
    assert.deepEqual(first!.filter((l) => /^content-length:/i.test(l)), []);
    assert.ok(first!.includes(`ETag: ${etag}`), first!.join('\n'));
    assert.equal(second![0], 'HTTP/1.1 401 Unauthorized');
  });
});
