// 204 and 304 have no content and must not carry `Content-Length: 0` (RFC 9110 sections 8.6, 15.3.5,
// 15.4.5): uWS wrote it for every answer ended with a body, an empty one included. Raw sockets, so the
// header lines are what went on the wire, and a request pipelined behind each shows the connection
// still frames correctly after an answer without a length. The same holds when the client asks to
// close: uWS' closing end wrote `Content-Length: 0` on a 204 or 304, and sent the body after the
// headers of a HEAD answer.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { rawRequest } from '../support/raw-http.js';
import { spawnService, type SpawnedService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

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
  let svc: SpawnedService;
  const origin = 'http://dashboard.local';
  before(async () => {
    // The built bundle, as users run it.
    svc = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', ''], { Cors__AllowedOrigins__0: origin });
  });
  after(async () => {
    svc.proc.kill('SIGTERM');
    await svc.exited;
  });

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

  it('the hub\'s preflight 204: no Content-Length; the next request on the connection is answered', async () => {
    const preflight = `OPTIONS /voice-hub/negotiate HTTP/1.1\r\nHost: x\r\nOrigin: ${origin}\r\nAccess-Control-Request-Method: POST\r\n\r\n`;
    const [first, second] = heads(await pipelined(svc.port, preflight + list, 2));
    assert.equal(first![0], 'HTTP/1.1 204 No Content');
    assert.deepEqual(first!.filter((l) => /^content-length:/i.test(l)), []);
    assert.ok(first!.includes(`Access-Control-Allow-Origin: ${origin}`), first!.join('\n'));
    assert.equal(second![0], 'HTTP/1.1 401 Unauthorized');
  });

  /** One request; the answer's header lines, what followed them, and whether the service closed. */
  const once = async (request: string): Promise<{ head: string[]; after: string; closedByServer: boolean }> => {
    const answer = await rawRequest(svc.port, request, 2000, 500);
    const end = answer.text.indexOf('\r\n\r\n');
    assert.ok(end > 0, answer.text);
    return { head: answer.text.slice(0, end).split('\r\n'), after: answer.text.slice(end + 4), closedByServer: answer.closedByServer };
  };
  const lengths = (head: string[]): string[] => head.filter((l) => /^content-length:/i.test(l));
  /** The Content-Length of an answer that has one. */
  const lengthOf = async (request: string): Promise<string[]> => {
    const found = lengths((await once(request)).head);
    assert.equal(found.length, 1, request);
    return found;
  };

  const answersWithoutContent = (connection: string): Array<{ name: string; request: () => Promise<string>; status: string; length: () => Promise<string[]> }> => [
    {
      name: 'a CORS preflight 204',
      request: async () => `OPTIONS /api/device/list HTTP/1.1\r\nHost: x\r\nOrigin: ${origin}\r\nAccess-Control-Request-Method: GET\r\nConnection: ${connection}\r\n\r\n`,
      status: 'HTTP/1.1 204 No Content',
      length: async () => [],
    },
    {
      name: 'the hub\'s preflight 204',
      request: async () => `OPTIONS /voice-hub/negotiate HTTP/1.1\r\nHost: x\r\nOrigin: ${origin}\r\nAccess-Control-Request-Method: POST\r\nConnection: ${connection}\r\n\r\n`,
      status: 'HTTP/1.1 204 No Content',
      length: async () => [],
    },
    {
      name: 'a 304 for the OpenAPI document',
      request: async () => {
        const etag = (await fetch(`${svc.url}/swagger/v1/swagger.json`, { headers: { 'accept-encoding': 'identity' } })).headers.get('etag');
        return `GET /swagger/v1/swagger.json HTTP/1.1\r\nHost: x\r\nIf-None-Match: ${etag}\r\nConnection: ${connection}\r\n\r\n`;
      },
      status: 'HTTP/1.1 304 Not Modified',
      length: async () => [],
    },
    {
      name: 'a HEAD answer (405)',
      request: async () => `HEAD /swagger/v1/swagger.json HTTP/1.1\r\nHost: x\r\nConnection: ${connection}\r\n\r\n`,
      status: 'HTTP/1.1 405 Method Not Allowed',
      // The length of the body it stands for, as on a connection that stays open.
      length: () => lengthOf('HEAD /swagger/v1/swagger.json HTTP/1.1\r\nHost: x\r\n\r\n'),
    },
    {
      name: 'the hub\'s HEAD answer (405)',
      request: async () => `HEAD /voice-hub/negotiate HTTP/1.1\r\nHost: x\r\nOrigin: ${origin}\r\nConnection: ${connection}\r\n\r\n`,
      status: 'HTTP/1.1 405 Method Not Allowed',
      length: () => lengthOf(`GET /voice-hub/negotiate HTTP/1.1\r\nHost: x\r\nOrigin: ${origin}\r\n\r\n`),
    },
  ];

  for (const answer of answersWithoutContent('close')) {
    it(`${answer.name} to "Connection: close": no content, the right length, then closed by the service`, async () => {
      const { head, after, closedByServer } = await once(await answer.request());
      assert.equal(head[0], answer.status);
      assert.deepEqual(lengths(head), await answer.length());
      assert.ok(head.includes('Connection: close'), head.join('\n'));
      assert.equal(after, '');
      assert.equal(closedByServer, true);
    });
  }

  for (const answer of answersWithoutContent('keep-alive, close')) {
    it(`${answer.name} to "Connection: keep-alive, close": no content, the right length, and Connection: close`, async () => {
      const { head, after } = await once(await answer.request());
      assert.equal(head[0], answer.status);
      assert.deepEqual(lengths(head), await answer.length());
      assert.ok(head.includes('Connection: close'), head.join('\n'));
      assert.equal(after, '');
    });
  }
});
