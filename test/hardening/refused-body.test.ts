// A client still sending a body over Server.MaxBodyBytes must get the 413, not a reset. The 413 closes
// the connection, and uWS closes the socket at once after it: the client's next bytes drew a TCP reset,
// which discarded the answer it had not read (an upload of 512 KiB got EPIPE nearly every time). The
// service now reads a refused body to its end, up to REFUSED_BODY_READ_BYTES past the limit, before it
// answers; a larger one is cut off there.
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { before, describe, it } from 'node:test';
import { REFUSED_BODY_READ_BYTES } from '../../src/http/body.js';
import { assertProblem } from '../support/problem.js';
import { spawnService, type SpawnedService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

const LIMIT = 1024;
const CHUNK = Buffer.alloc(16 * 1024, 0x20);

interface Outcome {
  /** The answer, or the error code of a connection that ended without one. */
  answer?: Answer;
  error?: string;
  /** Bytes handed to the socket before the answer or the error. */
  written: number;
}

type Answer = Parameters<typeof assertProblem>[0];

function readAnswer(res: IncomingMessage): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (d: string) => (body += d));
    res.on('end', () => resolve({ status: res.statusCode!, headers: Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, String(v)])), body }));
    res.on('error', reject);
  });
}

/** POSTs `size` bytes (without end: until the answer) in 16-KiB writes, as fast as the socket takes them. */
function upload(url: string, size: number | undefined, declare: boolean): Promise<Outcome> {
  return new Promise((resolve) => {
    let written = 0;
    let settled = false;
    const settle = (o: Omit<Outcome, 'written'>): void => {
      if (settled) return;
      settled = true;
      resolve({ ...o, written });
    };
    const failed = (e: NodeJS.ErrnoException): void => settle({ error: e.code ?? e.message });
    const req = httpRequest(`${url}/api/device/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(declare && size !== undefined ? { 'content-length': String(size) } : {}) },
    }, (res) => void readAnswer(res).then((answer) => settle({ answer }), failed));
    req.on('error', failed);
    const pump = (): void => {
      while (!settled && (size === undefined || written < size)) {
        const chunk = size === undefined ? CHUNK : CHUNK.subarray(0, Math.min(CHUNK.length, size - written));
        written += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!settled) req.end();
    };
    pump();
  });
}

const DETAIL = { detail: `The request body is larger than the limit of ${LIMIT} bytes.` };

describe('a body over Server.MaxBodyBytes, still being sent', () => {
  // The bundle in a process of its own: with client and service on one event loop the client never
  // writes while the service closes, and the reset never comes.
  let svc: SpawnedService;
  before(async () => {
    svc = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '', '--Server.MaxBodyBytes', String(LIMIT)]);
  });

  for (const declare of [true, false]) {
    it(`${declare ? 'with Content-Length' : 'chunked'}: 512 KiB sent as fast as the socket takes it get the 413, five times in five`, async () => {
      const outcomes: Outcome[] = [];
      for (let i = 0; i < 5; i++) outcomes.push(await upload(svc.url, 512 * 1024, declare));
      assert.deepEqual(outcomes.map((o) => o.error), [undefined, undefined, undefined, undefined, undefined]);
      for (const { answer } of outcomes) assertProblem(answer!, 413, DETAIL);
    });
  }

  it('is read only so far: an upload that never ends is cut off after the limit and REFUSED_BODY_READ_BYTES', async () => {
    const outcome = await upload(svc.url, undefined, false);
    // It ends with the 413 or, the socket closed under a sender, a reset; what matters is that it ends,
    // having written the limit and the bound plus what the two sockets' buffers hold.
    if (outcome.answer) assertProblem(outcome.answer, 413, DETAIL);
    else assert.match(String(outcome.error), /^(EPIPE|ECONNRESET)$/);
    assert.ok(outcome.written > LIMIT + REFUSED_BODY_READ_BYTES, `only ${outcome.written} bytes written`);
    assert.ok(outcome.written < LIMIT + REFUSED_BODY_READ_BYTES + 32 * 1024 * 1024, `${outcome.written} bytes written`);
  });

  it('a declared Content-Length past the bound is answered at once, before any of the body; one within it after the body', async () => {
    const answer = (size: number): { req: ReturnType<typeof httpRequest>; answered: Promise<Answer> } => {
      let req!: ReturnType<typeof httpRequest>;
      const answered = new Promise<Answer>((resolve, reject) => {
        req = httpRequest(`${svc.url}/api/device/register`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(size) } }, (res) => {
          readAnswer(res).then(resolve, reject);
        });
        req.on('error', reject);
        req.flushHeaders();
      });
      return { req, answered };
    };
    const past = answer(LIMIT + REFUSED_BODY_READ_BYTES + 1);
    assertProblem(await past.answered, 413, DETAIL);
    past.req.destroy();
    const within = answer(LIMIT + 1);
    const early = await Promise.race([within.answered, new Promise((resolve) => setTimeout(() => resolve('no answer yet'), 300))]);
    within.req.end(Buffer.alloc(LIMIT + 1, 0x20));
    assert.equal(early, 'no answer yet');
    assertProblem(await within.answered, 413, DETAIL);
  });
});
