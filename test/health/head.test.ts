// HEAD /health, on the running service: probes that read only the status (`wget --spider`, `curl -I`,
// load balancers) ask with HEAD, and ASP.NET Core answers every method on its health endpoint
// (MapHealthChecks is a Map, not a MapGet). Before, HEAD /health was 405 and such a probe saw the service
// down whatever its health; so were POST and the other methods, which ASP.NET Core answers with the report.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import net from 'node:net';
import { exchange, keepAliveRequest } from '../support/raw-http.js';
import { startService, type TestService } from '../support/service.js';

const NOT_CACHED = { 'cache-control': 'no-store, no-cache', pragma: 'no-cache', expires: 'Thu, 01 Jan 1970 00:00:00 GMT' };

describe('HEAD /health', () => {
  let svc: TestService;
  before(async () => {
    // Nothing listens at the configured upstream (test/support/service.ts): Unhealthy, 503.
    svc = await startService({ flags: { 'Mqtt.BrokerAddress': '' } });
  });

  /**
   * HEAD, then (once its headers are in) GET with `accept`, on one keep-alive connection: the text of
   * each answer. A body sent after the HEAD answer would show as the start of the second.
   */
  const headThenGet = (accept: string): Promise<[string, string]> =>
    new Promise((resolve, reject) => {
      const socket = net.connect(svc.port, '127.0.0.1');
      let text = '';
      let first: string | undefined;
      const timer = setTimeout(() => reject(new Error(`no answers: ${JSON.stringify(text)}`)), 10_000);
      socket.on('connect', () => socket.write(keepAliveRequest('HEAD', '/health', [['Accept', accept]])));
      socket.on('data', (d: Buffer) => {
        text += d.toString('latin1');
        if (first === undefined && text.includes('\r\n\r\n')) {
          first = text;
          text = '';
          socket.write(keepAliveRequest('GET', '/health', [['Accept', accept]]));
          return;
        }
        const head = text.indexOf('\r\n\r\n');
        const length = Number(/\r\nContent-Length: (\d+)\r\n/i.exec(text)?.[1] ?? NaN);
        if (first !== undefined && head >= 0 && text.length >= head + 4 + length) {
          clearTimeout(timer);
          socket.destroy();
          resolve([first, text]);
        }
      });
      socket.on('error', reject);
    });

  it('answers the status and headers of GET, with no body, and the connection serves the next request', async () => {
    const [head, get] = await headThenGet('text/plain');
    assert.match(head, /^HTTP\/1\.1 503 Service Unavailable\r\n/);
    assert.ok(head.endsWith('\r\n\r\n'), `nothing after the headers: ${JSON.stringify(head)}`);
    assert.match(head, /\r\nContent-Type: text\/plain; charset=utf-8\r\n/i);
    assert.match(head, /\r\nContent-Length: 9\r\n/i);
    for (const [name, value] of Object.entries(NOT_CACHED)) assert.match(head, new RegExp(`\\r\\n${name}: ${value}\\r\\n`, 'i'));
    assert.match(get, /^HTTP\/1\.1 503 Service Unavailable\r\n[\s\S]*\r\n\r\nUnhealthy$/);
  });

  it('the JSON answer too: the length of the report, no body', async () => {
    const [head, get] = await headThenGet('application/json');
    assert.match(head, /^HTTP\/1\.1 503 Service Unavailable\r\n/);
    assert.match(head, /\r\nContent-Type: application\/json; charset=utf-8\r\n/i);
    assert.ok(head.endsWith('\r\n\r\n'), `nothing after the headers: ${JSON.stringify(head)}`);
    assert.ok(Number(/\r\nContent-Length: (\d+)\r\n/i.exec(head)?.[1]) > 100, head);
    assert.equal(JSON.parse(get.slice(get.indexOf('\r\n\r\n') + 4)).status, 'Unhealthy');
  });

  it('is documented beside GET, without content', async () => {
    const doc = (await (await fetch(`${svc.url}/swagger/v1/swagger.json`)).json()) as { paths: Record<string, Record<string, { operationId: string; responses: Record<string, { content?: unknown }> }>> };
    const head = doc.paths['/health']!.head!;
    assert.equal(head.operationId, 'healthHead');
    assert.deepEqual(Object.keys(head.responses), ['200', '413', '503']);
    for (const response of Object.values(head.responses)) assert.equal(response.content, undefined);
  });

  it('every other method is answered as GET, never 405, as MapHealthChecks maps the endpoint for every method', async () => {
    // Methods uWS passes on (test/api/uws-refusals.test.ts), with and without a body; the body is read and dropped.
    for (const [method, body] of [['POST', ''], ['POST', '{"x":1}'], ['PUT', ''], ['DELETE', ''], ['PATCH', 'x'], ['OPTIONS', ''], ['TRACE', '']] as const) {
      const answer = await exchange(svc.port, [keepAliveRequest(method, '/HEALTH/', [['Accept', 'text/plain']], body), keepAliveRequest('GET', '/health', [['Accept', 'text/plain']])], { stepwise: true, expect: 2 });
      const [res, next] = answer.responses;
      assert.ok(res && next, `${method}: ${answer.rest.toString('latin1')}`);
      assert.deepEqual([res.status, res.headers.allow, res.headers['content-type'], res.body.toString()], [503, undefined, 'text/plain; charset=utf-8', 'Unhealthy'], method);
      for (const [name, value] of Object.entries(NOT_CACHED)) assert.equal(res.headers[name], value, `${method}: ${name}`);
      assert.equal(next.status, 503, `${method}: the connection serves the next request`);
    }
    const json = await fetch(`${svc.url}/health`, { method: 'POST' });
    assert.equal(json.status, 503);
    assert.equal(((await json.json()) as { status: string }).status, 'Unhealthy');
  });
});
