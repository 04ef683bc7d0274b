// A body that names a property more than once, in one spelling or in several cases: ASP.NET Core
// (System.Text.Json, case-insensitive) sets the property at each occurrence, so the last one written
// wins. JSON.parse left a name written twice at the place of its first occurrence, so a differently
// cased one between them won, and the last value was neither used nor checked.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { InjectResponse } from '../../src/http/inject.js';
import { assertProblem } from '../support/problem.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';

const INVALID = { title: 'One or more validation errors occurred.', detail: 'The request body is invalid.' };

describe('a property named more than once', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await startService();
    admin = await adminToken(svc);
  });
  const send = (method: string, url: string, text: string, token?: string): Promise<InjectResponse> =>
    svc.app.inject({ method, url, body: text, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) } });
  const voice = (text: string): Promise<InjectResponse> => send('PUT', '/api/config/voice', text, admin);
  const rate = (res: InjectResponse): unknown => (res.json() as { audioSampleRate: unknown }).audioSampleRate;

  it('takes the value written last, whatever the case of the names between', async () => {
    const res = await voice('{"audioSampleRate":8000,"AudioSampleRate":12000,"audioSampleRate":16000}');
    assert.equal(res.status, 200, res.body);
    assert.equal(rate(res), 16000);
    const again = await voice('{"AUDIOSAMPLERATE":8000,"audioSampleRate":24000,"AudioSampleRate":12000,"AUDIOSAMPLERATE":48000}');
    assert.equal(rate(again), 48000);
    const inner = await send('POST', '/api/device/register', '{"deviceId":"a","DeviceId":"b","deviceId":"c","deviceName":"n","deviceType":"t"}');
    assert.equal(inner.status, 200, inner.body);
    assert.equal((inner.json() as { deviceInfo: { id: string } }).deviceInfo.id, 'c');
  });

  it('checks the value written last: one the API refuses is refused, not passed over', async () => {
    assertProblem(await voice('{"audioSampleRate":8000,"AudioSampleRate":12000,"audioSampleRate":"bad"}'), 400, {
      ...INVALID,
      errors: { audioSampleRate: ['must be integer or null'] },
    });
    assertProblem(await voice('{"audioSampleRate":8000,"AudioSampleRate":12000,"audioSampleRate":16000.0}'), 400, {
      ...INVALID,
      errors: { audioSampleRate: ['must be integer or null'] },
    });
    // A null written last removes the stored value (the key reads the default again).
    await voice('{"audioSampleRate":24000}');
    assert.equal(rate(await voice('{"audioSampleRate":8000,"AudioSampleRate":12000,"audioSampleRate":null}')), 16000);
  });

  it('reads each value written before the last as its property\'s type, as System.Text.Json does: one it cannot read is refused', async () => {
    assertProblem(await voice('{"audioSampleRate":"bad","audioSampleRate":16000}'), 400, { ...INVALID, errors: { audioSampleRate: ['must be integer or null'] } });
    assertProblem(await voice('{"AudioSampleRate":16000.0,"audioSampleRate":16000}'), 400, { ...INVALID, errors: { audioSampleRate: ['must be integer or null'] } });
    assertProblem(await voice('{"enableNoiseReduction":"yes","EnableNoiseReduction":true}'), 400, { ...INVALID, errors: { enableNoiseReduction: ['must be boolean or null'] } });
    assertProblem(await voice('{"wakeWords":["ok",1],"WAKEWORDS":["ok"]}'), 400, { ...INVALID, errors: { 'wakeWords[1]': ['must be string'] } });
    assertProblem(await voice('{"wakeWords":["\\ud800"],"wakeWords":[]}'), 400, { ...INVALID, errors: { 'wakeWords[0]': ['must be well-formed Unicode text (it holds a lone UTF-16 surrogate)'] } });
    // The value bound is the last: an earlier one of the right type is not checked further, and a null is nothing.
    const ok = await voice('{"audioSampleRate":44100,"audioSampleRate":null,"audioSampleRate":8000,"wakeWords":["x"],"wakeWords":null,"wakeWords":[]}');
    assert.equal(ok.status, 200, ok.body);
    assert.equal(rate(ok), 8000);
    const reg = await send('POST', '/api/device/register', '{"deviceId":"hid","deviceName":"n","deviceType":"t"}');
    const device = (reg.json() as { deviceToken: string }).deviceToken;
    const start = (text: string): Promise<InjectResponse> => send('POST', '/api/voice/start', text, device);
    assertProblem(await start('{"deviceId":"hid","sessionConfig":{"channels":"one"},"sessionConfig":{"channels":1}}'), 400, {
      ...INVALID,
      errors: { 'sessionConfig.channels': ['must be integer'] },
    });
    assertProblem(await start('{"deviceId":"hid","sessionConfig":{"channels":"one","Channels":1}}'), 400, { ...INVALID, errors: { 'sessionConfig.channels': ['must be integer'] } });
    assertProblem(await start('{"deviceId":1,"deviceId":"hid"}'), 400, { ...INVALID, errors: { deviceId: ['must be string'] } });
  });

  it('nested objects too, and names that only look alike stay apart', async () => {
    const reg = await send('POST', '/api/device/register', '{"deviceId":"nest","deviceName":"n","deviceType":"t"}');
    const device = (reg.json() as { deviceToken: string }).deviceToken;
    const start = await send(
      'POST',
      '/api/voice/start',
      '{"deviceId":"nest","sessionConfig":{"sampleRate":8000,"SampleRate":12000,"sampleRate":44100}}',
      device,
    );
    assertProblem(start, 400, { ...INVALID, errors: { 'sessionConfig.sampleRate': ['must be one of 8000, 12000, 16000, 24000, 48000'] } });
    const words = await voice('{"wakeWords":["a"],"wakeWords\\u0000":1}');
    assertProblem(words, 400, { ...INVALID, errors: { 'wakeWords\u0000': ["Unknown setting 'wakeWords\u0000'."] } });
    const proto = await voice('{"__proto__":1,"__proto__":{"x":1}}');
    assertProblem(proto, 400, { ...INVALID, errors: Object.fromEntries([['__proto__', ["Unknown setting '__proto__'."]]]) });
  });
});
