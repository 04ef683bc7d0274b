// Request bodies shaped to make per-request work grow faster than their size, under the default 64 KiB
// body limit: nesting 20,000 arrays deep (ASP.NET Core MVC refuses more than 32 levels, its MaxDepth), and
// thousands of ill-formed strings (each named in the answer by its path, which costs its depth: 5,000 of
// them 20,000 levels deep took gigabytes before the depth limit and the cap on how many are named).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';

let svc: TestService;
// Stopped when the file ends (test/support/service.ts).
before(async () => {
  svc = await startService();
});

const post = (raw: string) => call(svc.url, 'POST', '/api/device/register', { raw, headers: { 'content-type': 'application/json' } });
const ILL_FORMED = 'must be well-formed Unicode text (it holds a lone UTF-16 surrogate)';

describe('request bodies shaped to grow the work', () => {
  it('a body nesting more than 32 objects and arrays is refused with one error', async () => {
    const deep = await post(`{"deviceId":${'['.repeat(20_000)}${']'.repeat(20_000)}}`);
    assert.equal(deep.status, 400);
    assert.equal(deep.json.detail, 'The request body is invalid.');
    assert.deepEqual(deep.json.errors, { $: ['The JSON value nests more than 32 objects and arrays.'] });
  });

  it('32 levels are read as the schema says', async () => {
    const atLimit = await post(`{"deviceId":${'['.repeat(31)}${']'.repeat(31)}}`);
    assert.equal(atLimit.status, 400);
    assert.deepEqual(atLimit.json.errors.deviceId, ['must be string']);
  });

  // ASP.NET Core MVC's JsonOptions read a body with MaxDepth 32 (MvcOptions' model binding depth), not
  // System.Text.Json's 64: 33 levels are a 400 there even where they sit in a property no request names.
  it('33 levels are refused also in a property the schema does not name; 32 are taken', async () => {
    const body = (id: string, arrays: number): string => `{"deviceId":"${id}","deviceName":"n","deviceType":"t","extra":${'['.repeat(arrays)}${']'.repeat(arrays)}}`;
    const over = await post(body('depth-33', 32));
    assert.equal(over.status, 400, over.text);
    assert.equal(over.json.title, 'One or more validation errors occurred.');
    assert.deepEqual(over.json.errors, { $: ['The JSON value nests more than 32 objects and arrays.'] });
    const at = await post(body('depth-32', 31));
    assert.equal(at.status, 200, at.text);
  });

  // ASP.NET's MaxModelValidationErrors: 199 errors, then one saying the rest went unsaid, under the empty key.
  const TOO_MANY = 'The maximum number of allowed model errors has been reached.';

  it('at most 200 errors: the first 199 ill-formed strings, then that there were more', async () => {
    const many = await post(`{"deviceId":"d","x":[${Array.from({ length: 1000 }, () => '"\\ud800"').join(',')}]}`);
    assert.equal(many.status, 400);
    const named = Object.keys(many.json.errors).filter((k) => k.startsWith('x['));
    assert.equal(named.length, 199);
    assert.deepEqual(named.slice(0, 3), ['x[0]', 'x[1]', 'x[2]']);
    assert.deepEqual(many.json.errors['x[198]'], [ILL_FORMED]);
    assert.deepEqual(many.json.errors[''], [TOO_MANY]);
    assert.equal(Object.values(many.json.errors as Record<string, string[]>).flat().length, 200);
  });

  it('at most 200 errors of the schema too: 1,000 wrong items answer a few KB', async () => {
    const raw = JSON.stringify({ deviceId: 'd', deviceName: 'n', deviceType: 't', capabilities: new Array(1000).fill(1) });
    const many = await post(raw);
    assert.equal(many.status, 400);
    const errors = many.json.errors as Record<string, string[]>;
    assert.deepEqual(errors.capabilities, ['must NOT have more than 64 items']);
    assert.deepEqual(errors['capabilities[0]'], ['must be string']);
    assert.deepEqual(errors['capabilities[197]'], ['must be string']);
    assert.equal(errors['capabilities[198]'], undefined);
    assert.deepEqual(errors[''], [TOO_MANY]);
    assert.equal(Object.values(errors).flat().length, 200);
    assert.ok(many.text.length < 16 * 1024, `${many.text.length} bytes`);
  });

  it('a body of more than 1,024 values is refused for that alone, without looking at each', async () => {
    const raw = JSON.stringify({ deviceId: 'd', deviceName: 'n', deviceType: 't', capabilities: new Array(16_000).fill(1) });
    assert.ok(raw.length < 64 * 1024);
    const many = await post(raw);
    assert.equal(many.status, 400);
    assert.equal(many.json.detail, 'The request body is invalid.');
    assert.deepEqual(many.json.errors, { $: ['The JSON value holds more than 1024 values.'] });
    // 1,024 (four members and 1,020 items) are read as the schema says.
    const atLimit = await post(JSON.stringify({ deviceId: 'd', deviceName: 'n', deviceType: 't', capabilities: new Array(1020).fill('a') }));
    assert.deepEqual(atLimit.json.errors, { capabilities: ['must NOT have more than 64 items'] });
  });

  it('a long name is clipped in the keys and messages that repeat it: 220 errors under a 62,000-character name answer a few KB, not 12 MB', async () => {
    const name = 'K'.repeat(62_000);
    const ill = await post(`{"deviceId":"b","deviceName":"n","deviceType":"t","${name}":[${Array.from({ length: 220 }, () => '"\\ud800"').join(',')}]}`);
    assert.equal(ill.status, 400);
    const errors = ill.json.errors as Record<string, string[]>;
    assert.deepEqual(errors[`${'K'.repeat(128)}…[0]`], [ILL_FORMED]);
    assert.deepEqual(errors[''], [TOO_MANY]);
    assert.ok(ill.text.length < 64 * 1024, `${ill.text.length} bytes`);
    const unknown = await call(svc.url, 'PUT', '/api/config/voice', { raw: `{"${name}":1}`, headers: { 'content-type': 'application/json' }, token: await adminToken(svc) });
    assert.equal(unknown.status, 400);
    assert.deepEqual(unknown.json.errors, { [`${'K'.repeat(128)}…`]: [`Unknown setting '${'K'.repeat(128)}…'.`] });
  });
});
