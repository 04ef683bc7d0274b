// A whole number written with a fraction or an exponent is no integer: ASP.NET Core (System.Text.Json)
// answers 400 to `16000.0` or `1.6e4` in an int field, where JSON.parse alone makes them 16000. A field
// that takes any number takes them as the numbers they are. The raw JSON texts are sent as written.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { InjectResponse } from '../../src/http/inject.js';
import { assertProblem } from '../support/problem.js';
import { INVALID, rawBodies } from './raw-bodies.js';

describe('whole numbers written with a fraction or an exponent', () => {
  const rig = rawBodies('{"deviceId":"num-1","deviceName":"Num","deviceType":"speaker"}');
  const send = rig.send;
  const start = (sessionConfig: string): Promise<InjectResponse> => send('POST', '/api/voice/start', `{"deviceId":"num-1","sessionConfig":${sessionConfig}}`, rig.device);

  it('are refused in an integer field, in every spelling, with the message a fractional number gets', async () => {
    for (const rate of ['16000.0', '1.6e4', '1.6E+4', '16000e0', '1600000e-2', '16000.000', '160.00e2']) {
      assertProblem(await start(`{"sampleRate":${rate}}`), 400, { ...INVALID, errors: { 'sessionConfig.sampleRate': ['must be integer'] } });
    }
    // Whole only once parsed: more digits than a double keeps, some of them on each side of the dot.
    for (const rate of ['15999.9999999999999', '15999.99999999999999999', '16000.0000000000001']) {
      assertProblem(await start(`{"sampleRate":${rate}}`), 400, { ...INVALID, errors: { 'sessionConfig.sampleRate': ['must be integer'] } });
    }
    assertProblem(await start('{"sampleRate":16000.5}'), 400, { ...INVALID, errors: { 'sessionConfig.sampleRate': ['must be integer'] } });
    assertProblem(await start('{"sampleRate":16000,"channels":1.0}'), 400, { ...INVALID, errors: { 'sessionConfig.channels': ['must be integer'] } });
  });

  // System.Text.Json cannot convert a number past Int32 for an int field either, in any spelling: one
  // failed conversion, not a range. JSON.parse makes `1e400` Infinity, which the validator took for an
  // integer and judged by its list of values or its maximum alone.
  it('a number past Int32 in an integer field is refused as no integer, whatever its spelling', async () => {
    for (const rate of ['1e400', '-1e400', '1E+400', '2147483648', '-2147483649', '99999999999999999999', `1${'0'.repeat(400)}`]) {
      assertProblem(await start(`{"sampleRate":${rate}}`), 400, { ...INVALID, errors: { 'sessionConfig.sampleRate': ['must be integer'] } });
    }
    const settings = (text: string): Promise<InjectResponse> => send('PUT', '/api/config/device', text, rig.admin);
    assertProblem(await settings('{"maxDevices":1e400}'), 400, { ...INVALID, errors: { maxDevices: ['must be integer or null'] } });
    assertProblem(await settings('{"maxDevices":2147483648}'), 400, { ...INVALID, errors: { maxDevices: ['must be integer or null'] } });
    // An earlier occurrence of a name is read by System.Text.Json too: past Int32 it fails the body,
    // though the last one, the value bound, is fine (this was a 200 setting maxDevices to 5).
    assertProblem(await settings('{"maxDevices":2147483648,"maxDevices":5}'), 400, { ...INVALID, errors: { maxDevices: ['must be integer or null'] } });
    assertProblem(await settings('{"maxDevices":99999999999,"MaxDevices":5}'), 400, { ...INVALID, errors: { maxDevices: ['must be integer or null'] } });
    // Within Int32 a number is judged by its range as before, the largest and smallest included.
    assertProblem(await settings('{"maxDevices":2147483647}'), 400, { ...INVALID, errors: { maxDevices: ['must be <= 100000'] } });
    assertProblem(await settings('{"maxDevices":-2147483648}'), 400, { ...INVALID, errors: { maxDevices: ['must be >= 0'] } });
    assertProblem(await send('PUT', '/api/config/mqtt', '{"port":4294967297}', rig.admin), 400, { ...INVALID, errors: { port: ['must be integer or null'] } });
    // A field of any number judges its range: 1e400 is over 200 degrees there.
    assertProblem(await send('PUT', '/api/device/num-1/status', '{"status":"online","temperature":1e400}', rig.device), 400, { ...INVALID, errors: { temperature: ['must be <= 200'] } });
  });

  it('are judged where the body puts them: names in any case, the last of a repeated name, a null field', async () => {
    assertProblem(await send('POST', '/api/voice/start', '{"DeviceId":"num-1","SessionConfig":{"SAMPLERATE":16000.0}}', rig.device), 400, {
      ...INVALID,
      errors: { 'sessionConfig.sampleRate': ['must be integer'] },
    });
    assertProblem(await start('{"sampleRate":16000,"sampleRate":16000.0}'), 400, { ...INVALID, errors: { 'sessionConfig.sampleRate': ['must be integer'] } });
    const voice = (text: string): Promise<InjectResponse> => send('PUT', '/api/config/voice', text, rig.admin);
    assertProblem(await voice('{"audioSampleRate":24000.0}'), 400, { ...INVALID, errors: { audioSampleRate: ['must be integer or null'] } });
    // The first of two is not the value bound, but System.Text.Json reads it as an integer all the same.
    assertProblem(await voice('{"audioSampleRate":24000.0,"audioSampleRate":24000}'), 400, { ...INVALID, errors: { audioSampleRate: ['must be integer or null'] } });
    const put = await voice('{"audioSampleRate":24000,"audioSampleRate":24000,"audioChannels":null}');
    assert.equal(put.status, 200, put.body);
    assert.equal((put.json() as { audioSampleRate: number }).audioSampleRate, 24000);
    const restored = await voice('{"audioSampleRate":16000}');
    assert.equal(restored.status, 200, restored.body);
  });

  it('are taken as numbers where any number is, and digits inside strings are text', async () => {
    const res = await send('PUT', '/api/device/num-1/status', '{"status":"online","temperature":2.0e1,"batteryLevel":50.0,"cpuUsage":1E1}', rig.device);
    assert.equal(res.status, 200, res.body);
    assert.deepEqual((res.json() as { metrics: unknown }).metrics, { batteryLevel: 50, temperature: 20, memoryUsage: null, cpuUsage: 10 });
    const reg = await send('POST', '/api/device/register', String.raw`{"deviceId":"num-2","deviceName":"a\"16000.0\\","deviceType":"1.6e4","location":"\u0031.0"}`);
    assert.equal(reg.status, 200, reg.body);
    assert.deepEqual((reg.json() as { deviceInfo: { name: string } }).deviceInfo.name, 'a"16000.0\\');
    assertProblem(await start('{"sampleRate":"16000.0"}'), 400, { ...INVALID, errors: { 'sessionConfig.sampleRate': ['must be integer'] } });
  });

  // One error for a value of the wrong type, as ASP.NET's failed conversion is one; the list of values
  // is said of an integer that is not in it.
  it('a value of the wrong type is one error, not also what its range or values say', async () => {
    assertProblem(await start('{"sampleRate":true}'), 400, { ...INVALID, errors: { 'sessionConfig.sampleRate': ['must be integer'] } });
    assertProblem(await start('{"sampleRate":44100}'), 400, { ...INVALID, errors: { 'sessionConfig.sampleRate': ['must be one of 8000, 12000, 16000, 24000, 48000'] } });
    const reg = await send('POST', '/api/device/register', '{"deviceId":"num-3","deviceName":"n","deviceType":"t","capabilities":[7,"x"]}');
    assert.equal(reg.status, 400, reg.body);
    assert.deepEqual((reg.json() as { errors: unknown }).errors, { 'capabilities[0]': ['must be string'] });
  });
});
