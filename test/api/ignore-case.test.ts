// Names compared regardless of case compare as ASP.NET Core compares them (OrdinalIgnoreCase: each
// character by its invariant simple uppercase mapping), not as toLowerCase() folds them: the Kelvin
// sign K (U+212A) lowers to an ASCII k but uppercases to itself, so `wa\u212AeWords` is no `wakeWords`.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { CONFIG_SCHEMA, type SchemaNode } from '../../src/config/schema.js';
import { findProperty } from '../../src/config/schema-keys.js';
import { caseKey } from '../../src/ignore-case.js';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';

const KELVIN = '\u212A';

describe('caseKey', () => {
  it('ASCII letters in either case are one name; other characters by their simple uppercase mapping', () => {
    const same = (a: string, b: string): boolean => caseKey(a) === caseKey(b);
    assert.ok(same('wakeWords', 'WAKEWORDS'));
    assert.ok(same('Stra\u00dfe', 'STRA\u00dfE'), 'ß has no simple uppercase: it stays, and matches itself');
    assert.ok(!same('Strasse', 'Stra\u00dfe'), 'ß is no SS');
    assert.ok(same('\u00e9t\u00e9', '\u00c9T\u00c9'), 'é and É');
    assert.ok(!same('\u017Fend', 'SEND'), ".NET's ordinal casing keeps the long s (ICU uppercases it to S)");
    assert.ok(same('\u017Fend', '\u017FEND'), 'the long s matches itself');
    // Simple mappings where toUpperCase() gives two characters: U+1F80 to U+1F88, U+1FB3 to U+1FBC.
    assert.ok(same('\u1F80', '\u1F88'), 'alpha with psili and ypogegrammeni is its capital with prosgegrammeni');
    assert.ok(same('\u1FB3\u1FC3\u1FF3', '\u1FBC\u1FCC\u1FFC'));
    assert.ok(!same('\u1F80', '\u1F08\u0399'), 'no full mapping into two characters');
    assert.ok(same('\u0345', '\u03B9'), 'the ypogegrammeni uppercases to iota, as a small iota does');
    assert.ok(same('\u03C2', '\u03C3'), 'final and medial sigma are one capital sigma');
    // Beyond the BMP .NET folds six scripts only (OrdinalCasing.ToUpperSurrogate).
    assert.ok(same('\u{10428}', '\u{10400}'), 'Deseret small and capital long i');
    assert.ok(same('\u{1E922}', '\u{1E900}'), 'Adlam small and capital alif');
    assert.ok(!same('\u{10597}', '\u{10570}'), 'Vithkuqi, which .NET does not fold, though toUpperCase() does');
    assert.ok(!same(`wa${KELVIN}eWords`, 'wakeWords'), 'the Kelvin sign uppercases to itself');
    assert.ok(!same('dev\u0131ce', 'device'), '.NET keeps the dotless i in invariant uppercasing');
    assert.ok(!same('dev\u0130ce', 'device'), 'the dotted capital I is no i');
  });
});

describe('names that only toLowerCase() folded together', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await startService();
    admin = await adminToken(svc);
  });

  it('a body property named with the Kelvin sign is an unknown setting, not wakeWords', async () => {
    const name = `wa${KELVIN}eWords`;
    const res = await call(svc.url, 'PUT', '/api/config/voice', { token: admin, body: { [name]: ['hey'] } });
    assertProblem(answered(res), 400, {
      title: 'One or more validation errors occurred.',
      detail: 'The request body is invalid.',
      errors: { [name]: [`Unknown setting '${name}'.`] },
    });
    const voice = await call(svc.url, 'GET', '/api/config/voice', { token: admin });
    assert.deepEqual(voice.json.wakeWords, [], 'nothing stored');
  });

  it('a body property spelt with the long s is no property: .NET keeps it apart from s', async () => {
    const device = await registerDevice(svc, { deviceId: 'long-s-dev' });
    const path = `/api/device/${device.id}/status`;
    assertProblem(answered(await call(svc.url, 'PUT', path, { token: device.token, body: { '\u017Ftatus': 'online' } })), 400, {
      title: 'One or more validation errors occurred.',
      detail: 'The request body is invalid.',
      errors: { status: ['The status field is required.'] },
    });
    const ok = await call(svc.url, 'PUT', path, { token: device.token, body: { STATUS: 'online' } });
    assert.equal(ok.status, 200, ok.text);
  });

  it('a route literal spelt with the Kelvin sign is no route', async () => {
    const device = await registerDevice(svc, { deviceId: 'kelvin-dev' });
    const path = `/api/device/${device.id}/to%E2%84%AAen`;
    assertProblem(answered(await call(svc.url, 'POST', path, { token: device.token })), 404, { detail: `No route matches POST ${path}.` });
    const refreshed = await call(svc.url, 'POST', `/api/device/${device.id}/TOKEN`, { token: device.token });
    assert.equal(refreshed.status, 200, refreshed.text);
  });

  it('a configuration key spelt with the Kelvin sign is no key', () => {
    const section = CONFIG_SCHEMA.properties!.DeviceManagement as SchemaNode;
    assert.equal(findProperty(section, 'tokenexpiration'), 'TokenExpiration');
    assert.equal(findProperty(section, `To${KELVIN}enExpiration`), undefined);
  });
});
