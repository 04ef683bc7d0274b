// A number written as a JSON string is that number to ASP.NET Core: MVC reads bodies with System.Text.Json's
// web defaults, whose NumberHandling is AllowReadingFromString, so `"batteryLevel":"85"` is 85 there, at any
// level of the body and in an earlier occurrence of a name alike. A text that is no number of the field's
// type (a fraction or white space for an int, past Int32, not finite) is the type error it was.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { InjectResponse } from '../../src/http/inject.js';
import { assertProblem } from '../support/problem.js';
import { INVALID, rawBodies } from './raw-bodies.js';

describe('numbers written as strings', () => {
  const rig = rawBodies('{"deviceId":"quoted-1","deviceName":"123","deviceType":"45"}');
  const send = rig.send;
  const status = (text: string): Promise<InjectResponse> => send('PUT', '/api/device/quoted-1/status', text, rig.device);
  const settings = (category: string, text: string): Promise<InjectResponse> => send('PUT', `/api/config/${category}`, text, rig.admin);

  it('are read as the numbers they write, in number and integer fields', async () => {
    const res = await status('{"status":"online","batteryLevel":"85","temperature":"-21.5","memoryUsage":"1e1","cpuUsage":"+0.5"}');
    assert.equal(res.status, 200, res.body);
    assert.deepEqual((res.json() as { metrics: unknown }).metrics, { batteryLevel: 85, temperature: -21.5, memoryUsage: 10, cpuUsage: 0.5 });
    const voice = await settings('voice', '{"audioSampleRate":"24000","AudioChannels":"+2"}');
    assert.equal(voice.status, 200, voice.body);
    assert.deepEqual([(voice.json() as { audioSampleRate: number }).audioSampleRate, (voice.json() as { audioChannels: number }).audioChannels], [24000, 2]);
    const devices = await settings('device', '{"maxDevices":"0010"}');
    assert.equal(devices.status, 200, devices.body);
    assert.equal((devices.json() as { maxDevices: number }).maxDevices, 10);
    // Escaped digits are digits once read.
    const escaped = await settings('voice', String.raw`{"audioSampleRate":"\u00312000"}`);
    assert.equal(escaped.status, 200, escaped.body);
    assert.equal((escaped.json() as { audioSampleRate: number }).audioSampleRate, 12000);
    // Nested: the quoted sample rate is read, and the quoted channel count is judged by its values.
    assertProblem(await send('POST', '/api/voice/start', '{"deviceId":"quoted-1","sessionConfig":{"sampleRate":"16000","channels":"3"}}', rig.device), 400, {
      ...INVALID,
      errors: { 'sessionConfig.channels': ['must be one of 1, 2'] },
    });
  });

  it('are judged by the field\'s range once read', async () => {
    assertProblem(await settings('device', '{"maxDevices":"100001"}'), 400, { ...INVALID, errors: { maxDevices: ['must be <= 100000'] } });
    assertProblem(await status('{"status":"online","temperature":"201"}'), 400, { ...INVALID, errors: { temperature: ['must be <= 200'] } });
  });

  it('stay strings, and a type error, when the text is no number of the field\'s type', async () => {
    for (const text of ['"24000.0"', '"2.4e4"', '" 24000"', '"24000 "', '"0x5DC0"', '""', '"2147483648"', '"1,000"', '"NaN"']) {
      assertProblem(await settings('voice', `{"audioSampleRate":${text}}`), 400, { ...INVALID, errors: { audioSampleRate: ['must be integer or null'] } });
    }
    // Past a double, and the named literals, which no range takes (System.Text.Json reads those, and its
    // range check refuses them: a 400 all the same).
    for (const text of ['"1e400"', '"-1e400"', '"NaN"', '"Infinity"', '"-Infinity"', '"twenty"', '"20 C"', '""']) {
      assertProblem(await status(`{"status":"online","temperature":${text}}`), 400, { ...INVALID, errors: { temperature: ['must be number or null'] } });
    }
    // A text field takes digits as text: the device registered above is named "123".
    const list = await send('GET', '/api/device/list', '', rig.admin);
    assert.equal((list.json() as { devices: Array<{ name: string; type: string }> }).devices[0]!.name, '123');
  });

  it('are read so in an earlier occurrence of a name too', async () => {
    const res = await settings('device', '{"maxDevices":"5","maxDevices":7}');
    assert.equal(res.status, 200, res.body);
    assert.equal((res.json() as { maxDevices: number }).maxDevices, 7);
    assertProblem(await settings('device', '{"maxDevices":"5.0","maxDevices":7}'), 400, { ...INVALID, errors: { maxDevices: ['must be integer or null'] } });
  });
});
