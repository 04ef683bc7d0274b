// Text the database keeps as it is must come back as it was acknowledged. sql.js reads a stored text up
// to its first U+0000, so a registration named `ab\u0000cd` was answered 200 and listed, then and after
// every restart, as `ab`; a session's user likewise. Such text is refused (400) instead, naming the field;
// everything else, control characters included, is kept whole through a restart.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { startService, type TestService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { adminToken, registerDevice } from '../support/tokens.js';

const NUL_TEXT = 'must not hold U+0000 (NUL), which the database cannot keep';
const invalid = (errors: Record<string, string[]>) => ({ title: 'One or more validation errors occurred.', detail: 'The request body is invalid.', errors });

describe('text the database keeps', () => {
  const dataDir = tmpDir();
  let svc: TestService | undefined;
  after(async () => {
    await svc?.stop();
  });

  it('a registration with U+0000 in its name, type or location is refused, naming each field', async () => {
    svc = await startService({ dataDir });
    const res = await call(svc.url, 'POST', '/api/device/register', {
      body: { deviceId: 'nul-1', deviceName: 'ab\u0000cd', deviceType: 't\u0000', location: '\u0000', capabilities: ['a\u0000b'] },
    });
    assertProblem(answered(res), 400, invalid({ deviceName: [NUL_TEXT], deviceType: [NUL_TEXT], location: [NUL_TEXT] }));
    const list = await call(svc.url, 'GET', '/api/device/list', { token: await adminToken(svc) });
    assert.deepEqual(list.json, { devices: [], totalCount: 0 });
  });

  it('a session start with U+0000 in its user is refused', async () => {
    const { id, token } = await registerDevice(svc!, { deviceId: 'nul-2' });
    const res = await call(svc!.url, 'POST', '/api/voice/start', { token, body: { deviceId: id, userId: 'anna\u0000x' } });
    assertProblem(answered(res), 400, invalid({ userId: [NUL_TEXT] }));
  });

  it('other text, control characters and all, is listed as registered, also after a restart', async () => {
    const name = 'Küche\u0001\u001f\u007f\u0085 \u{1F600}';
    const res = await call(svc!.url, 'POST', '/api/device/register', { body: { deviceId: 'nul-3', deviceName: name, deviceType: 'x\ty', location: 'l\nm' } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.deviceInfo.name, name);
    const listed = async (): Promise<unknown> => {
      const list = await call(svc!.url, 'GET', '/api/device/list', { token: await adminToken(svc!) });
      return list.json.devices.filter((d: { id: string }) => d.id === 'nul-3').map((d: { name: string; type: string; location: string }) => [d.name, d.type, d.location]);
    };
    assert.deepEqual(await listed(), [[name, 'x\ty', 'l\nm']]);
    await svc!.stop();
    svc = await startService({ dataDir });
    assert.deepEqual(await listed(), [[name, 'x\ty', 'l\nm']]);
  });
});
