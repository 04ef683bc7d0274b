// The HTTP API's error boundary, through the real request pipeline in process (inject): a coded domain
// error becomes its problem answer; a bug (a TypeError in a handler) becomes a generic 500 whose traceId
// is the one the log line with the stack names.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { DomainError } from '../../src/errors.js';
import { createInject } from '../../src/http/inject.js';
import { httpPipeline } from '../../src/http/pipeline.js';
import { Router, type Route } from '../../src/http/router.js';
import { createLogger } from '../../src/log/logger.js';

const lines: string[] = [];
const route = (path: string, handler: Route['handler']): Route => ({
  method: 'GET', path, operationId: path, summary: path, tag: 'test', auth: {}, responses: { 200: { description: 'ok' } }, handler,
});
const inject = createInject(httpPipeline({
  router: new Router([
    route('/bug', () => {
      const devices = new Map<string, { name: string }>();
      return { status: 200, body: devices.get('x')!.name };
    }),
    route('/coded', () => {
      throw new DomainError('conflict', "device 'd1' is busy");
    }),
  ]),
  maxBodyBytes: 1024,
  auth: { apiKeys: [], verifyToken: () => Promise.reject(new Error('no tokens in this test')), isTokenCurrent: () => true, requireDeviceTokenForVoice: false },
  logger: createLogger({ levels: { Default: 'Debug' }, write: (l) => lines.push(l), timestamps: false }, 'Http'),
  accessLog: createLogger({ levels: { Default: 'None' } }),
}));

it('a bug answers a generic 500 whose traceId the logged stack names', async () => {
  const res = await inject({ method: 'GET', url: '/bug' });
  assert.equal(res.status, 500);
  const body = res.json() as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ['status', 'title', 'traceId', 'type']);
  assert.deepEqual({ ...body, traceId: undefined }, {
    type: 'https://tools.ietf.org/html/rfc9110#section-15.6.1',
    title: 'An error occurred while processing your request.',
    status: 500,
    traceId: undefined,
  });
  assert.match(String(body.traceId), /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
  assert.doesNotMatch(res.body, /TypeError|Cannot read/);
  const logged = lines.filter((l) => l.includes(String(body.traceId)));
  assert.equal(logged.length, 1);
  assert.match(logged[0]!, /^fail: Http: unhandled error in GET \/bug \(trace id [^)]+\): TypeError: Cannot read properties of undefined \(reading 'name'\)\s+at /);
});

it('a coded domain error answers its problem, and is no error in the log', async () => {
  const before = lines.length;
  const res = await inject({ method: 'GET', url: '/coded' });
  assert.equal(res.status, 409);
  const body = res.json() as Record<string, unknown>;
  assert.deepEqual({ ...body, traceId: undefined }, {
    type: 'https://tools.ietf.org/html/rfc9110#section-15.5.10',
    title: 'Conflict',
    status: 409,
    detail: "device 'd1' is busy",
    traceId: undefined,
  });
  assert.ok(!lines.slice(before).some((l) => l.startsWith('fail:')));
});
